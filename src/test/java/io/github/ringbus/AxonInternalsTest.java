package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventsourcing.AbstractSnapshotTrigger;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTrigger;
import org.axonframework.eventsourcing.Snapshotter;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every access of {@link AxonInternals} works on this Axon version: each test fails on an Axon upgrade that takes one
 * away, instead of ringbus silently falling back (loading aggregates twice, snapshots on the pipeline, per-aggregate
 * settings ignored, tracking processors skipping events).
 */
class AxonInternalsTest {

    @Test
    void axonSubscribesInstanceCommandsWithTheHandlerClassThePreloadStageRecognises() {
        Map<String, MessageHandler<?>> subscribed = new HashMap<>();
        CommandBus recording = (CommandBus) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[]{CommandBus.class}, (proxy, method, args) -> {
                    if (method.getName().equals("subscribe")) {
                        subscribed.put((String) args[0], (MessageHandler<?>) args[1]);
                        return (org.axonframework.common.Registration) () -> true;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        AggregateAnnotationCommandHandler.<Account>builder()
                                         .aggregateType(Account.class)
                                         .repository(EventSourcingRepository.builder(Account.class)
                                                                            .eventStore(store)
                                                                            .build())
                                         .build()
                                         .subscribe(recording);

        MessageHandler<?> deposit = subscribed.get(AccountCommands.Deposit.class.getName());
        MessageHandler<?> open = subscribed.get(AccountCommands.Open.class.getName());

        assertThat(deposit.getClass().getName()).isEqualTo(AxonInternals.INSTANCE_COMMAND_HANDLER);
        assertThat(open.getClass().getName()).isNotEqualTo(AxonInternals.INSTANCE_COMMAND_HANDLER);
        store.shutDown();
    }

    @Test
    void everyAccessToAxonsInternalsIsAvailable() {
        assertThat(AxonInternals.unavailable()).isEmpty();
    }

    @Test
    void axonsStorageEnginesAreWhereRingbusLooksForThemByName() {
        for (String engine : AxonInternals.AXON_STORAGE_ENGINES) {
            boolean onTheClassPath;
            try {
                Class.forName(engine, false, getClass().getClassLoader());
                onTheClassPath = true;
            } catch (ClassNotFoundException e) {
                onTheClassPath = false;
            }
            assertThat(onTheClassPath).as("%s in this Axon version", engine).isTrue();
        }
    }

    @Test
    void axonsGapAwareEnginesDeclareTheMaxGapOffsetRingbusReads() throws Exception {
        for (String engine : AxonInternals.AXON_STORAGE_ENGINES.subList(0, 3)) {
            Class<?> type = Class.forName(engine, false, getClass().getClassLoader());
            assertThat(type.getDeclaredField(AxonInternals.MAX_GAP_OFFSET).getType()).as(engine).isEqualTo(int.class);
            assertThat(type.getDeclaredField(AxonInternals.GAP_TIMEOUT).getType()).as(engine).isEqualTo(int.class);
        }
    }

    @Test
    void theGapTimeoutOfAxonsJdbcEngineCanBeRead() {
        org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine engine =
                org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine.builder()
                        .connectionProvider(() -> {
                            throw new IllegalStateException("not connected");
                        })
                        .transactionManager(org.axonframework.common.transaction.NoTransactionManager.INSTANCE)
                        .gapTimeout(12_345)
                        .build();

        assertThat(AxonInternals.gapTimeoutOf(engine)).isEqualTo(12_345);
        assertThat(AxonInternals.gapTimeoutOf(new InMemoryEventStorageEngine())).isEqualTo(-1);
    }

    /** The key ringbus reads is the one Axon's event bus queues a Unit of Work's published events under. */
    @Test
    void theEventQueueKeyOfAxonsEventBusIsWhereItQueuesPublishedEvents() {
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        try {
            String key = AxonInternals.eventQueueKeyOf(store);
            org.axonframework.messaging.unitofwork.DefaultUnitOfWork<?> unitOfWork =
                    org.axonframework.messaging.unitofwork.DefaultUnitOfWork.startAndGet(null);
            try {
                store.publish(org.axonframework.eventhandling.GenericEventMessage.asEventMessage("published"));
                assertThat(key).isNotNull();
                assertThat(unitOfWork.resources()).containsKey(key);
                assertThat((java.util.List<?>) unitOfWork.getResource(key)).hasSize(1);
            } finally {
                unitOfWork.rollback();
            }
            assertThat(AxonInternals.eventQueueKeyOf(null)).isNull();
        } finally {
            store.shutDown();
        }
    }

    @Test
    void theMaxGapOffsetOfAxonsJdbcEngineCanBeRead() {
        org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine engine =
                org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine.builder()
                        .connectionProvider(() -> {
                            throw new IllegalStateException("not connected");
                        })
                        .transactionManager(org.axonframework.common.transaction.NoTransactionManager.INSTANCE)
                        .maxGapOffset(12_345)
                        .build();

        assertThat(AxonInternals.maxGapOffsetOf(engine)).isEqualTo(12_345);
        assertThat(AxonInternals.maxGapOffsetOf(new InMemoryEventStorageEngine())).isEqualTo(-1);
    }

    @Test
    void theEnginesWithoutGapsAreWhereRingbusLooksForThemByName() throws Exception {
        // Axon's in-memory engine is on this class path; Axon Server's is checked where its connector is.
        assertThat(Class.forName(AxonInternals.GAP_FREE_STORAGE_ENGINES.get(0))).isNotNull();
        String axonServersCheck = java.nio.file.Files.readString(java.nio.file.Path.of(
                "examples/axon-server/src/test/java/io/github/ringbus/examples/axonserver/AxonServerEngineNameTest.java"));
        assertThat(axonServersCheck).contains("\"" + AxonInternals.GAP_FREE_STORAGE_ENGINES.get(1) + "\"");
        assertThat(AxonInternals.isGapFree(new InMemoryEventStorageEngine())).isTrue();
    }

    @Test
    void theStorageEngineOfAnAxonEventStoreCanBeRead() {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(engine).build();

        assertThat(AxonInternals.storageEngineOf(store)).isSameAs(engine);
        store.shutDown();
    }

    @Test
    void theSnapshotterOfAnAxonSnapshotTriggerCanBeRead() {
        Snapshotter snapshotter = (type, id) -> {
        };
        SnapshotTrigger trigger = new EventCountSnapshotTriggerDefinition(snapshotter, 10)
                .prepareTrigger(Account.class);

        assertThat(trigger).isInstanceOf(AbstractSnapshotTrigger.class);
        assertThat(AxonInternals.snapshotterOf((AbstractSnapshotTrigger) trigger)).isSameAs(snapshotter);
    }

    @Test
    void theSettingsOfAnAggregateConfigurerCanBeRead() throws Exception {
        AggregateConfigurer<Account> configurer = AggregateConfigurer.defaultConfiguration(Account.class);
        for (AxonInternals.AggregateSetting setting : AxonInternals.AggregateSetting.values()) {
            assertThat(AxonInternals.component(configurer, setting)).as("component %s", setting).isNotNull();
        }
        assertThat(AxonInternals.builderOf(AxonInternals.component(configurer,
                                                                   AxonInternals.AggregateSetting.REPOSITORY)))
                .isNotNull();
    }

    /** Access 8: what ringbus reads of the handlers {@code AggregateAnnotationCommandHandler.subscribe} subscribes. */
    @Test
    void theHandlersAxonsAggregateCommandHandlerSubscribesCanBeRead() {
        org.axonframework.modelling.command.Repository<Account> repository =
                org.axonframework.eventsourcing.EventSourcingRepository.builder(Account.class)
                        .eventStore(org.axonframework.eventsourcing.eventstore.EmbeddedEventStore.builder()
                                            .storageEngine(new org.axonframework.eventsourcing.eventstore.inmemory
                                                    .InMemoryEventStorageEngine()).build())
                        .build();
        java.util.Map<String, Object> subscribed = new java.util.HashMap<>();
        org.axonframework.commandhandling.SimpleCommandBus bus =
                new org.axonframework.commandhandling.SimpleCommandBus(
                        org.axonframework.commandhandling.SimpleCommandBus.builder()) {
                    @Override
                    public org.axonframework.common.Registration subscribe(
                            String commandName,
                            org.axonframework.messaging.MessageHandler<? super
                                    org.axonframework.commandhandling.CommandMessage<?>> handler) {
                        subscribed.put(commandName, handler);
                        return () -> true;
                    }
                };
        org.axonframework.modelling.command.AggregateAnnotationCommandHandler.<Account>builder()
                .aggregateType(Account.class).repository(repository).build().subscribe(bus);

        assertThat(subscribed).isNotEmpty();
        subscribed.forEach((name, handler) -> {
            AxonInternals.AggregateHandler read = AxonInternals.aggregateHandlerOf(handler);
            assertThat(read).as("handler of %s (%s)", name, handler.getClass().getName()).isNotNull();
            assertThat(read.repository()).isSameAs(repository);
            assertThat(read.targetResolver()).isNotNull();
            assertThat(read.aggregateType()).isEqualTo(Account.class);
        });
        assertThat(subscribed.values()).anyMatch(h -> AxonInternals.aggregateHandlerOf(h).creates())
                                       .anyMatch(h -> !AxonInternals.aggregateHandlerOf(h).creates());
    }

    /** Access 10: the component behind Axon's {@code AnnotationCommandHandlerAdapter}. */
    @Test
    void theComponentBehindAnExternalCommandHandlerCanBeRead() {
        Object component = new Object() {
            @org.axonframework.commandhandling.CommandHandler
            void handle(String command) {
            }
        };

        assertThat(AxonInternals.annotatedHandlerTarget(
                new org.axonframework.commandhandling.AnnotationCommandHandlerAdapter<>(component)))
                .isSameAs(component);
    }

    @Test
    void theCallbacksAxonsGatewayWrapsCanBeRead() {
        java.util.List<org.axonframework.commandhandling.CommandCallback<?, ?>> dispatched = new java.util.ArrayList<>();
        org.axonframework.commandhandling.SimpleCommandBus bus =
                new org.axonframework.commandhandling.SimpleCommandBus(
                        org.axonframework.commandhandling.SimpleCommandBus.builder()) {
                    @Override
                    public <C, R> void dispatch(
                            org.axonframework.commandhandling.CommandMessage<C> command,
                            org.axonframework.commandhandling.CommandCallback<? super C, ? super R> callback) {
                        dispatched.add(callback);
                    }
                };
        java.util.concurrent.ScheduledExecutorService scheduler =
                java.util.concurrent.Executors.newSingleThreadScheduledExecutor();
        try {
            org.axonframework.commandhandling.gateway.DefaultCommandGateway.builder().commandBus(bus)
                    .retryScheduler(org.axonframework.commandhandling.gateway.IntervalRetryScheduler.builder()
                                            .retryExecutor(scheduler).retryInterval(10).maxRetryCount(1).build())
                    .build().send("command");
        } finally {
            scheduler.shutdownNow();
        }

        // CommandGateway.send: a RetryingCallback around a WrappedCommandCallback of a FailureLoggingCallback (around
        // nothing: it only logs) and the FutureCallback.
        org.axonframework.commandhandling.CommandCallback<?, ?> retrying = dispatched.get(0);
        org.axonframework.commandhandling.CommandCallback<?, ?> wrapped = AxonInternals.wrappedCallback(retrying, 0);
        assertThat(wrapped).isInstanceOf(org.axonframework.commandhandling.WrappedCommandCallback.class);
        org.axonframework.commandhandling.CommandCallback<?, ?> failureLogging =
                AxonInternals.wrappedCallback(wrapped, 0);
        assertThat(failureLogging)
                .isInstanceOf(org.axonframework.commandhandling.callbacks.FailureLoggingCallback.class);
        assertThat(AxonInternals.isWrappingCallback(failureLogging)).isTrue();
        assertThat(AxonInternals.wrappedCallback(failureLogging, 0)).isNull();
        assertThat(AxonInternals.wrappedCallback(wrapped, 1))
                .isInstanceOf(org.axonframework.commandhandling.callbacks.FutureCallback.class);
        assertThat(CallbackThread.runsOnCompleteThread(retrying, true)).isTrue();
        assertThat(CallbackThread.runsOnCompleteThread(retrying, false)).isFalse();
    }
}
