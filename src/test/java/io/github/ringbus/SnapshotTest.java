package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.AggregateSnapshotter;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Snapshots, however they are configured (the builder's snapshotter, a trigger definition given to the builder, an
 * aggregate's own trigger in an Axon configuration), are taken on the bus's snapshot thread after the triggering
 * command's events were stored, and used when an aggregate is loaded.
 * <p>
 * Axon's {@link AggregateSnapshotter} takes a snapshot on the thread that asks for it unless given an executor; here
 * it has none, so the thread that stores the snapshot is the thread the bus chose.
 */
class SnapshotTest {

    private final SnapshotRecordingEngine engine = new SnapshotRecordingEngine();
    private final RingEventStore store = RingEventStore.builder().storageEngine(engine).build();
    private final AggregateSnapshotter axonSnapshotter = AggregateSnapshotter.builder()
            .eventStore(store)
            .aggregateFactories(new GenericAggregateFactory<>(Account.class))
            .build();
    private RingCommandBus bus;
    private Configuration configuration;

    @AfterEach
    void shutDown() {
        if (bus != null) {
            bus.shutdown();
        }
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    private RingCommandBus startBus(RingCommandBus.Builder builder) {
        RingCommandBus started = builder.build();
        started.registerAggregate(Account.class);
        started.start();
        return started;
    }

    private RingCommandBus startBusWithSnapshotter() {
        return startBus(RingCommandBus.builder().eventStore(store).snapshotter(axonSnapshotter, 5));
    }

    private static Object send(CommandBus bus, Object command) throws Exception {
        CompletableFuture<CommandResultMessage<?>> result = new CompletableFuture<>();
        bus.dispatch(asCommandMessage(command), (message, resultMessage) -> result.complete(resultMessage));
        CommandResultMessage<?> message = result.get(10, TimeUnit.SECONDS);
        assertThat(message.isExceptional()).as("%s failed: %s", command, message.optionalExceptionResult())
                                           .isFalse();
        return message.getPayload();
    }

    private static void openAndDeposit(CommandBus bus, String account, int deposits) throws Exception {
        send(bus, new Open(account));
        for (int i = 1; i <= deposits; i++) {
            send(bus, new Deposit(account, i));
        }
    }

    private Optional<DomainEventMessage<?>> awaitSnapshot(String id) throws InterruptedException {
        return awaitSnapshot(id, 10_000);
    }

    private Optional<DomainEventMessage<?>> awaitSnapshot(String id, long millis) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        Optional<DomainEventMessage<?>> snapshot = engine.readSnapshot(id);
        while (snapshot.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
            snapshot = engine.readSnapshot(id);
        }
        return snapshot;
    }

    @Test
    void snapshotsOfTheBuildersSnapshotterAreTakenOnTheSnapshotThread() throws Exception {
        bus = startBusWithSnapshotter();
        openAndDeposit(bus, "a", 10);

        assertThat(awaitSnapshot("a")).isPresent();
        assertThat(engine.snapshotThreads).isNotEmpty().allMatch("ringbus-snapshot"::equals);
    }

    @Test
    void snapshotsOfATriggerDefinitionGivenToTheBuilderAreTakenOnTheSnapshotThread() throws Exception {
        bus = startBus(RingCommandBus.builder()
                                     .eventStore(store)
                                     .snapshotTriggerDefinition(
                                             new EventCountSnapshotTriggerDefinition(axonSnapshotter, 5)));
        openAndDeposit(bus, "a", 10);

        assertThat(awaitSnapshot("a")).isPresent();
        assertThat(engine.snapshotThreads).isNotEmpty().allMatch("ringbus-snapshot"::equals);
    }

    @Test
    void anAggregatesOwnTriggerInAnAxonConfigurationSnapshotsOnTheSnapshotThread() throws Exception {
        configuration = DefaultConfigurer
                .defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                // Axon's default snapshotter requires a transaction manager component
                .configureTransactionManager(c -> NoTransactionManager.INSTANCE)
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .configureAggregate(AggregateConfigurer.defaultConfiguration(Account.class)
                                                       .configureSnapshotTrigger(
                                                               c -> new EventCountSnapshotTriggerDefinition(
                                                                       c.snapshotter(), 5)))
                .start();
        openAndDeposit(configuration.commandBus(), "a", 10);

        assertThat(awaitSnapshot("a")).isPresent();
        assertThat(engine.snapshotThreads).isNotEmpty().allMatch("ringbus-snapshot"::equals);
    }

    @Test
    void theSnapshotIsTakenAfterTheEventsOfTheCommandThatTriggeredItWereStored() throws Exception {
        bus = startBus(RingCommandBus.builder().eventStore(store).snapshotter(axonSnapshotter, 3));
        openAndDeposit(bus, "a", 1);
        bus.shutdown();
        // Loaded from the store (two events replayed), Axon's trigger asks for the snapshot while the command
        // prepares its commit, before its events are stored; an aggregate created in the bus would ask at cleanup.
        bus = startBus(RingCommandBus.builder().eventStore(store).snapshotter(axonSnapshotter, 3));
        engine.holdAppends();
        CompletableFuture<CommandResultMessage<?>> triggering = new CompletableFuture<>();
        // the third event (sequence number 2) triggers the snapshot
        bus.dispatch(asCommandMessage(new Deposit("a", 2)), (message, result) -> triggering.complete(result));
        engine.awaitHeldAppend();

        Optional<DomainEventMessage<?>> earlySnapshot = awaitSnapshot("a", 500);
        engine.releaseAppends();

        assertThat(earlySnapshot).as("a snapshot taken while the triggering events were not stored").isEmpty();
        assertThat(triggering.get(10, TimeUnit.SECONDS).isExceptional()).isFalse();
        Optional<DomainEventMessage<?>> snapshot = awaitSnapshot("a");
        assertThat(snapshot).isPresent();
        assertThat(snapshot.get().getSequenceNumber()).isEqualTo(2L);
    }

    @Test
    void aggregateIsLoadedFromItsSnapshotAndLaterEvents() throws Exception {
        bus = startBusWithSnapshotter();
        openAndDeposit(bus, "a", 10);
        assertThat(awaitSnapshot("a")).isPresent();
        bus.shutdown();

        bus = startBusWithSnapshotter(); // an empty cache: the preload stage reads snapshot and events from the store
        assertThat(send(bus, new Deposit("a", 100))).isEqualTo(155L);
    }

    /** Axon's in-memory engine, noting the thread that stores each snapshot, and holding appends on demand. */
    private static final class SnapshotRecordingEngine extends InMemoryEventStorageEngine {

        final List<String> snapshotThreads = new CopyOnWriteArrayList<>();
        private final CountDownLatch appendHeld = new CountDownLatch(1);
        private volatile CountDownLatch appendGate;

        /** Makes the next appends wait until {@link #releaseAppends()}. */
        void holdAppends() {
            appendGate = new CountDownLatch(1);
        }

        void awaitHeldAppend() throws InterruptedException {
            assertThat(appendHeld.await(10, TimeUnit.SECONDS)).as("an append was held").isTrue();
        }

        void releaseAppends() {
            appendGate.countDown();
        }

        @Override
        public void appendEvents(List<? extends EventMessage<?>> events) {
            CountDownLatch gate = appendGate;
            if (gate != null) {
                appendHeld.countDown();
                try {
                    gate.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException("interrupted while held", e);
                }
            }
            super.appendEvents(events);
        }

        @Override
        public void storeSnapshot(DomainEventMessage<?> snapshot) {
            snapshotThreads.add(Thread.currentThread().getName());
            super.storeSnapshot(snapshot);
        }
    }
}
