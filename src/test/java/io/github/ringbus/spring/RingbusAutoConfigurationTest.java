package io.github.ringbus.spring;

import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.RingCommandBus;
import static io.github.ringbus.RingInternals.RING_REPOSITORY;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Withdraw;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.Snapshotter;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.Repository;
import org.axonframework.tracing.SpanFactory;
import org.axonframework.modelling.command.AnnotationCommandTargetResolver;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.BeanFactoryAnnotationUtils;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The auto-configuration in a Spring Boot context with Axon's auto-configuration, found the way an application finds
 * it: through {@code @EnableAutoConfiguration} and the {@code AutoConfiguration.imports} files on the class path.
 */
class RingbusAutoConfigurationTest {

    static {
        // Axon's update checker must not try to reach the internet from a test.
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SpringAccount.class)
    static class BankApp {

        @Bean
        EventStorageEngine storageEngine() {
            return new InMemoryEventStorageEngine();
        }
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    static class Metrics {

        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    static class Tracing {

        @Bean
        RecordingSpanFactory spanFactory() {
            return new RecordingSpanFactory();
        }
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @Import(LedgerWithOwnRepository.class)
    static class OwnRepository {

        /**
         * With Axon's default PessimisticLockFactory, a thread-bound lock: each command of an aggregate with a
         * repository of its own runs whole on the handler thread that owns the aggregate (load, handle, commit, lock
         * released), so the lock is taken and released on one thread.
         */
        @Bean
        EventSourcingRepository<LedgerWithOwnRepository> ledgerRepository(EventStore eventStore) {
            return EventSourcingRepository.builder(LedgerWithOwnRepository.class)
                                          .eventStore(eventStore)
                                          .build();
        }
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    static class OwnCommandBus {

        @Bean
        SimpleCommandBus commandBus() {
            return SimpleCommandBus.builder().build();
        }
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SnapshottedCounter.class)
    static class SnapshotApp {

        @Bean
        SnapshotRecordingEngine storageEngine() {
            return new SnapshotRecordingEngine();
        }

        /** Axon's event-count trigger on the application's snapshotter (Axon's SpringAggregateSnapshotter). */
        @Bean
        SnapshotTriggerDefinition counterSnapshots(Snapshotter snapshotter) {
            return new EventCountSnapshotTriggerDefinition(snapshotter, 3);
        }
    }

    /** Axon's in-memory engine, noting the thread that stores each snapshot. */
    static final class SnapshotRecordingEngine extends InMemoryEventStorageEngine {

        final List<String> snapshotThreads = new CopyOnWriteArrayList<>();

        @Override
        public void storeSnapshot(DomainEventMessage<?> snapshot) {
            snapshotThreads.add(Thread.currentThread().getName());
            super.storeSnapshot(snapshot);
        }
    }

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withUserConfiguration(BankApp.class)
                                          .withPropertyValues("axon.axonserver.enabled=false");

    @Test
    void theCommandBusIsRingbusQualifiedLocalSegment() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            CommandBus bus = context.getBean(CommandBus.class);
            assertThat(bus).isInstanceOf(RingCommandBus.class);
            assertThat(BeanFactoryAnnotationUtils.qualifiedBeanOfType(context.getBeanFactory(), CommandBus.class,
                                                                      "localSegment")).isSameAs(bus);
            assertThat(context.getBean(Configuration.class).commandBus()).isSameAs(bus);
            assertThat(context.getBean(EventStore.class)).isInstanceOf(RingEventStore.class);
            assertThat(context.getBean(Configuration.class).eventStore()).isSameAs(context.getBean(EventStore.class));
            assertThat(((RingCommandBus) bus).isRunning()).isTrue();
        });
    }

    @Test
    void aggregatesGetARingRepository() {
        runner.run(context -> {
            assertThat(context.getBean(Configuration.class).repository(SpringAccount.class))
                    .isInstanceOf(RING_REPOSITORY);
            assertThat(context.getBean("springAccountRepository", Repository.class))
                    .isInstanceOf(RING_REPOSITORY);
        });
    }

    @Test
    void commandsSentThroughTheGatewayRunOnTheRingAndTheirEventsAreStored() {
        runner.run(context -> {
            List<String> threads = new CopyOnWriteArrayList<>();
            context.getBean(CommandBus.class).registerHandlerInterceptor((unitOfWork, chain) -> {
                threads.add(Thread.currentThread().getName());
                return chain.proceed();
            });
            CommandGateway gateway = context.getBean(CommandGateway.class);

            gateway.sendAndWait(new Open("a"));
            Object balance = gateway.sendAndWait(new Deposit("a", 42));

            assertThat(balance).isEqualTo(42L);
            assertThat(threads).hasSize(2).allMatch(StageThreads::handles);
            List<? extends DomainEventMessage<?>> events =
                    context.getBean(EventStore.class).readEvents("a").asStream().collect(Collectors.toList());
            assertThat(events.stream().<Object>map(EventMessage::getPayload).collect(Collectors.toList()))
                    .containsExactly(new Opened("a"), new Deposited("a", 42));
            // Axon's correlation data providers apply: the events carry the command's identifier.
            assertThat(events.get(0).getMetaData()).containsKey("correlationId");
        });
    }

    @Test
    void aBusinessRuleFailureReachesTheCaller() {
        runner.run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);
            gateway.sendAndWait(new Open("a"));

            Throwable failure = catchFailure(() -> gateway.sendAndWait(new Withdraw("a", 1)));

            assertThat(failure).hasMessageContaining("cannot withdraw 1");
        });
    }

    @Test
    void anAggregateNamingItsOwnRepositoryKeepsIt() {
        runner.withUserConfiguration(OwnRepository.class).run(context -> {
            Configuration axon = context.getBean(Configuration.class);
            assertThat(axon.repository(LedgerWithOwnRepository.class))
                    .isSameAs(context.getBean("ledgerRepository"));
            assertThat(axon.repository(SpringAccount.class)).isInstanceOf(RING_REPOSITORY);
            List<String> threads = new CopyOnWriteArrayList<>();
            context.getBean(CommandBus.class).registerHandlerInterceptor((unitOfWork, chain) -> {
                threads.add(Thread.currentThread().getName());
                return chain.proceed();
            });

            context.getBean(CommandGateway.class).sendAndWait(new LedgerWithOwnRepository.OpenLedger("l"));
            context.getBean(CommandGateway.class).sendAndWait(new LedgerWithOwnRepository.OpenLedger("m"));

            assertThat(threads).hasSize(2).allMatch(StageThreads::handles);
            assertThat(context.getBean(EventStore.class).readEvents("l").asStream().count()).isEqualTo(1);
            assertThat(context.getBean(EventStore.class).readEvents("m").asStream().count()).isEqualTo(1);
        });
    }

    @Test
    void anAggregatesSnapshotTriggerDefinitionIsHonouredAndItsSnapshotsAreTakenOffThePipeline() {
        new ApplicationContextRunner().withUserConfiguration(SnapshotApp.class)
                                      .withPropertyValues("axon.axonserver.enabled=false")
                                      .run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);
            SnapshotRecordingEngine engine = context.getBean(SnapshotRecordingEngine.class);

            gateway.sendAndWait(new SnapshottedCounter.Start("c"));
            for (int i = 0; i < 5; i++) {
                gateway.sendAndWait(new SnapshottedCounter.Increment("c"));
            }

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (engine.readSnapshot("c").isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertThat(engine.readSnapshot("c")).as("a snapshot of the counter").isPresent();
            assertThat(engine.snapshotThreads).isNotEmpty().allMatch("ringbus-snapshot"::equals);
        });
    }

    @Test
    void theApplicationsOwnCommandBusWins() {
        runner.withUserConfiguration(OwnCommandBus.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(RingCommandBus.class);
            assertThat(context.getBean(CommandBus.class)).isInstanceOf(SimpleCommandBus.class);
            assertThat(context.getBean(Configuration.class).repository(SpringAccount.class))
                    .isNotInstanceOf(RING_REPOSITORY);
            context.getBean(CommandGateway.class).sendAndWait(new Open("a"));
        });
    }

    @Test
    void disabledRestoresAxonsDefaultCommandBus() {
        runner.withPropertyValues("ringbus.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context).doesNotHaveBean(RingCommandBus.class);
            assertThat(context).doesNotHaveBean(RingEventStore.class);
            assertThat(context.getBean(CommandBus.class)).isInstanceOf(SimpleCommandBus.class);
            assertThat(context.getBean(Configuration.class).repository(SpringAccount.class))
                    .isNotInstanceOf(RING_REPOSITORY);
            CommandGateway gateway = context.getBean(CommandGateway.class);
            gateway.sendAndWait(new Open("a"));
            assertThat((Object) gateway.sendAndWait(new Deposit("a", 5))).isEqualTo(5L);
        });
    }

    @Test
    void disabledSaysSoInOneLineAtStart() {
        runner.withPropertyValues("ringbus.enabled=false").run(context -> {
            assertThat(context).hasSingleBean(RingbusOffAutoConfiguration.RingbusOff.class);
            assertThat(context.getBean(RingbusOffAutoConfiguration.RingbusOff.class).line())
                    .startsWith("ringbus is off (ringbus.enabled=false)");
        });
        runner.run(context -> assertThat(context).doesNotHaveBean(RingbusOffAutoConfiguration.RingbusOff.class));
    }

    @Test
    void disabledRestoresAxonsCommandTargetResolver() {
        runner.withPropertyValues("ringbus.enabled=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(Configuration.class).getComponent(CommandTargetResolver.class))
                    .isInstanceOf(AnnotationCommandTargetResolver.class);
        });
    }

    @Test
    void theDefaultReadsAheadTakeAtMostHalfTheApplicationsConnectionPool() {
        runner.withBean(javax.sql.DataSource.class, () -> {
                  com.zaxxer.hikari.HikariDataSource pool = new com.zaxxer.hikari.HikariDataSource();
                  pool.setJdbcUrl("jdbc:postgresql://localhost:1/never-connected");
                  pool.setMaximumPoolSize(10);
                  return pool;
              })
              .run(context -> assertThat(context.getBean(RingCommandBus.class).readAheadThreads()).isEqualTo(5));
    }

    @Test
    void aStatedDatabaseLatencyRaisesTheDefaultReadsAhead() {
        runner.withPropertyValues("ringbus.database-latency=10ms")
              .run(context -> assertThat(context.getBean(RingCommandBus.class).readAheadThreads())
                      .as("10 ms: a read takes 30.25 ms, past 64 at once on any machine").isEqualTo(64));
    }

    @Test
    void aDatabaseLatencyOutOfRangeStopsTheStartNamingTheProperty() {
        runner.withPropertyValues("ringbus.database-latency=11s")
              .run(context -> assertThat(context).hasFailed().getFailure()
                                                 .hasStackTraceContaining("ringbus.database-latency"));
    }

    @Test
    void propertiesReachTheBus() {
        runner.withPropertyValues("ringbus.ring-size=64", "ringbus.handler-threads=3",
                                  "ringbus.wait-strategy=blocking", "ringbus.full-ring-policy=fail-fast",
                                  "ringbus.thread-name-prefix=bank", "ringbus.read-ahead-threads=0")
              .run(context -> {
                  RingCommandBus bus = context.getBean(RingCommandBus.class);
                  assertThat(bus.ringSize()).isEqualTo(64);
                  assertThat(bus.readAheadThreads()).isZero();
                  assertThat(bus.handlerThreads()).isEqualTo(3);
                  List<String> threads = new CopyOnWriteArrayList<>();
                  bus.registerHandlerInterceptor((unitOfWork, chain) -> {
                      threads.add(Thread.currentThread().getName());
                      return chain.proceed();
                  });
                  context.getBean(CommandGateway.class).sendAndWait(new Open("a"));
                  assertThat(threads).singleElement().asString().startsWith("bank-handle-");
              });
    }

    @Test
    void anInvalidRingSizeFailsStartUpNamingTheProperty() {
        assertStartUpFails("ringbus.ring-size=1000", "ringbus.ring-size must be a power of two of at least 2");
    }

    @Test
    void otherInvalidValuesFailStartUpNamingTheirProperty() {
        assertStartUpFails("ringbus.handler-threads=0", "ringbus.handler-threads must be between 1 and 256");
        assertStartUpFails("ringbus.full-ring-timeout=0s", "ringbus.full-ring-timeout must be positive");
        assertStartUpFails("ringbus.shutdown-timeout=-1s", "ringbus.shutdown-timeout must be positive");
        assertStartUpFails("ringbus.cache-size=0", "ringbus.cache-size must be positive");
        assertStartUpFails("ringbus.read-ahead-threads=65", "ringbus.read-ahead-threads must be between 0 and 64");
        assertStartUpFails("ringbus.max-store-batch-events=-5", "ringbus.max-store-batch-events must be positive");
        assertStartUpFails("ringbus.thread-name-prefix= ", "ringbus.thread-name-prefix must not be blank");
        assertStartUpFails("ringbus.wait-strategy=sometimes", "ringbus.wait-strategy");
    }

    private void assertStartUpFails(String property, String message) {
        runner.withPropertyValues(property).run(context -> {
            assertThat(context).hasFailed();
            assertThat(fullMessage(context.getStartupFailure())).contains(message);
        });
    }

    private static String fullMessage(Throwable failure) {
        StringBuilder messages = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            messages.append(t.getMessage()).append('\n');
        }
        return messages.toString();
    }

    @Test
    void closingTheContextDrainsCommandsInFlight() {
        int accounts = 20;
        int commands = 400;
        Map<Integer, AtomicInteger> callbacks = new ConcurrentHashMap<>();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        runner.withPropertyValues("ringbus.handler-threads=1").run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);
            for (int a = 0; a < accounts; a++) {
                gateway.sendAndWait(new Open("acc-" + a));
            }
            RingCommandBus bus = context.getBean(RingCommandBus.class);
            bus.registerHandlerInterceptor((unitOfWork, chain) -> {
                LockSupport.parkNanos(1_000_000); // keep commands in flight when the context closes
                return chain.proceed();
            });
            for (int i = 0; i < commands; i++) {
                int n = i;
                callbacks.put(n, new AtomicInteger());
                CommandMessage<Deposit> deposit =
                        GenericCommandMessage.asCommandMessage(new Deposit("acc-" + (n % accounts), 1));
                bus.dispatch(deposit, (CommandMessage<? extends Deposit> c, CommandResultMessage<?> result) -> {
                    callbacks.get(n).incrementAndGet();
                    if (result.isExceptional()) {
                        failures.add(result.exceptionResult());
                    }
                });
            }
            long completedBeforeClose = callbacks.values().stream().filter(c -> c.get() > 0).count();
            EventStorageEngine storage = context.getBean(EventStorageEngine.class);

            context.close();

            assertThat(completedBeforeClose).as("commands still in flight when closing").isLessThan(commands);
            assertThat(bus.isRunning()).isFalse();
            assertThat(callbacks.values()).allMatch(c -> c.get() == 1);
            assertThat(failures).isEmpty();
            long deposits = storage.readEvents(null, false).filter(e -> e.getPayload() instanceof Deposited).count();
            assertThat(deposits).isEqualTo(commands);
        });
    }

    @Test
    void metricsAreRecordedInTheMeterRegistry() {
        runner.withUserConfiguration(Metrics.class).run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);
            gateway.sendAndWait(new Open("a"));
            gateway.sendAndWait(new Deposit("a", 10));
            catchFailure(() -> gateway.sendAndWait(new Withdraw("a", 100)));

            MeterRegistry registry = context.getBean(MeterRegistry.class);
            assertThat(registry.get(RingbusMetrics.COMMANDS).tag("bus", "ringCommandBus").counter().count())
                    .isEqualTo(3);
            assertThat(registry.get(RingbusMetrics.FAILURES).tag("bus", "ringCommandBus")
                               .tag("exception", "InsufficientFundsException").counter().count())
                    .isEqualTo(1);
            for (String stage : List.of("preload", "handle", "store-publish", "end-to-end")) {
                assertThat(registry.get(RingbusMetrics.STAGE_LATENCY).tag("bus", "ringCommandBus")
                                   .tag("stage", stage).timer().count()).as(stage).isEqualTo(3);
            }
            assertThat(registry.get(RingbusMetrics.BATCH_EVENTS).tag("bus", "ringCommandBus").summary()
                               .totalAmount()).isEqualTo(2);
            assertThat(registry.get(RingbusMetrics.BATCH_COMMANDS).summary().count()).isPositive();
            // The complete stage frees a slot just after its callback fired: the last command's slot may still be
            // taken for a moment after sendAndWait returned.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (registry.get(RingbusMetrics.REMAINING).tag("bus", "ringCommandBus").gauge().value() < 4096
                   && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            assertThat(registry.get(RingbusMetrics.REMAINING).tag("bus", "ringCommandBus").gauge().value())
                    .isEqualTo(4096);
            assertThat(registry.get(RingbusMetrics.RING_SIZE).gauge().value()).isEqualTo(4096);
        });
    }

    @Test
    void metricsCanBeSwitchedOff() {
        runner.withUserConfiguration(Metrics.class).withPropertyValues("ringbus.metrics.enabled=false")
              .run(context -> {
                  context.getBean(CommandGateway.class).sendAndWait(new Open("a"));
                  assertThat(context.getBean(MeterRegistry.class).find(RingbusMetrics.COMMANDS).meters()).isEmpty();
              });
    }

    @Test
    void dispatchAndHandleAreTracedThroughAxonsSpanFactory() {
        runner.withUserConfiguration(Tracing.class).run(context -> {
            RecordingSpanFactory spans = (RecordingSpanFactory) context.getBean(SpanFactory.class);
            context.getBean(CommandGateway.class).sendAndWait(new Open("a"));

            assertThat(spans.started).contains(
                    new RecordingSpanFactory.Started("CommandBus.dispatchCommand", Thread.currentThread().getName()));
            assertThat(spans.started).anyMatch(s -> s.name().equals("CommandBus.handleCommand")
                    && StageThreads.handles(s.thread()));
        });
    }

    private static Throwable catchFailure(Runnable action) {
        try {
            action.run();
        } catch (RuntimeException e) {
            return e;
        }
        throw new AssertionError("expected a failure");
    }
}
