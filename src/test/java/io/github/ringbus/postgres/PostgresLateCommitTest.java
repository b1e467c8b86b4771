package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.EventMessageHandler;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventhandling.SimpleEventHandlerInvoker;
import org.axonframework.eventhandling.TrackingEventProcessor;
import org.axonframework.eventhandling.TrackingEventProcessorConfiguration;
import org.axonframework.eventhandling.tokenstore.inmemory.InMemoryTokenStore;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * A store held up longer than the storage engine's {@code gapTimeout} after a command's events were applied (here: its
 * transaction's begin waits, as for a connection from a pool that has none): committing those events then would let a
 * tracking processor give up on another writer's transaction still open (Axon's readers drop the gaps behind an event
 * older than the timeout), and that writer's event would never be handled. The command fails instead, nothing of it
 * stored, and the tracking processor handles every event, the other writer's included ({@code CommitDeadline}).
 */
class PostgresLateCommitTest extends OnPostgres {

    /**
     * Axon's default is 60 s; small here so that the store's hold-up can be longer. The bound is half of it: a busy
     * machine's own delays stay far below.
     */
    private static final int GAP_TIMEOUT_MILLIS = 4_000;

    @Test
    void aCommandWhoseEventsTheHeldUpStoreWouldCommitAfterTheGapTimeoutFailsAndNoTrackingProcessorMissesAnEvent()
            throws Exception {
        String run = UUID.randomUUID().toString().substring(0, 8);
        String late = "late-" + run;
        String prompt = "prompt-" + run;
        try (HikariDataSource pool = server.pool(8)) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            JdbcEventStorageEngine engine = JdbcEventStorageEngine.builder()
                    .connectionProvider(transactions.connectionProvider())
                    .transactionManager(transactions)
                    .eventSerializer(PostgresServer.SERIALIZER)
                    .snapshotSerializer(PostgresServer.SERIALIZER)
                    .persistenceExceptionResolver(new SQLStateResolver("23505"))
                    .gapTimeout(GAP_TIMEOUT_MILLIS)
                    .build();
            RingEventStore store = RingEventStore.builder().storageEngine(engine).build();
            HeldBegins begins = new HeldBegins(transactions);
            RingCommandBus bus = RingCommandBus.builder().eventStore(store).transactionManager(begins)
                                               .readTransactionManager(transactions.autoCommitReads())
                                               .topology(Topology.FULL).handlerThreads(2).storeThreads(2)
                                               .build();
            bus.registerAggregate(Account.class);
            bus.start();
            Set<String> handled = ConcurrentHashMap.newKeySet();
            TrackingEventProcessor processor = trackingProcessor(store, event -> handled.add(event.getIdentifier()));
            CountDownLatch inserted = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            try {
                assertThat(send(bus, new Open(late)).join().isExceptional()).isFalse();
                assertThat(send(bus, new Open(prompt)).join().isExceptional()).isFalse();
                processor.start();

                // Another writer (another node, say) inserts an event and keeps its transaction open.
                EventMessage<?> othersEvent = new GenericDomainEventMessage<>(
                        "Other", "other-" + run, 0, new Deposited("other-" + run, 7));
                CompletableFuture<Void> otherWriter = CompletableFuture.runAsync(() -> {
                    Transaction transaction = transactions.startTransaction();
                    try {
                        engine.appendEvents(othersEvent);
                        inserted.countDown();
                        release.await(30, TimeUnit.SECONDS);
                        transaction.commit();
                    } catch (Exception | Error e) {
                        transaction.rollback();
                        throw new IllegalStateException(e);
                    }
                });
                assertThat(inserted.await(10, TimeUnit.SECONDS)).isTrue();

                begins.holdNext(Duration.ofMillis(GAP_TIMEOUT_MILLIS * 3 / 2));
                CommandResultMessage<Object> heldUp = send(bus, new Deposit(late, 1)).get(30, TimeUnit.SECONDS);
                Thread.sleep(500); // the processor reads whatever that command stored, while the other is open
                CommandResultMessage<Object> afterIt = send(bus, new Deposit(prompt, 2)).get(30, TimeUnit.SECONDS);
                Thread.sleep(500);
                release.countDown();
                otherWriter.get(30, TimeUnit.SECONDS);

                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
                while (!handled.contains(othersEvent.getIdentifier()) && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertThat(handled).as("events the tracking processor handled")
                                   .contains(othersEvent.getIdentifier());
                assertThat(heldUp.isExceptional()).as("the held-up command's outcome").isTrue();
                assertThat(heldUp.exceptionResult()).isInstanceOf(EventStoreException.class)
                                                    .hasMessageContaining("gapTimeout of " + GAP_TIMEOUT_MILLIS + " ms")
                                                    .hasMessageContaining("nothing of it is stored");
                assertThat(afterIt.isExceptional()).as("%s", afterIt.optionalExceptionResult()).isFalse();
                assertThat(PostgresRing.storedDeposits(server, late)).isEmpty();
                assertThat(PostgresRing.storedDeposits(server, prompt)).containsExactly(2L);
                assertThat(send(bus, new Deposit(late, 3)).join().isExceptional())
                        .as("the held-up command's aggregate takes commands again").isFalse();
                assertThat(PostgresRing.storedDeposits(server, late)).containsExactly(3L);
            } finally {
                release.countDown();
                processor.shutDown();
                bus.shutdown();
                store.shutDown();
            }
        }
    }

    @SuppressWarnings("unchecked")
    private static CompletableFuture<CommandResultMessage<Object>> send(RingCommandBus bus, Object command) {
        CompletableFuture<CommandResultMessage<Object>> result = new CompletableFuture<>();
        bus.dispatch(asCommandMessage(command), (message, outcome) -> result.complete(
                (CommandResultMessage<Object>) outcome));
        return result;
    }

    private static TrackingEventProcessor trackingProcessor(RingEventStore store,
                                                            java.util.function.Consumer<EventMessage<?>> handler) {
        return TrackingEventProcessor.builder()
                .name("late-commit-watcher")
                .eventHandlerInvoker(SimpleEventHandlerInvoker.builder().eventHandlers(
                        (EventMessageHandler) event -> {
                            handler.accept(event);
                            return null;
                        }).build())
                .messageSource(store)
                .tokenStore(new InMemoryTokenStore())
                .transactionManager(NoTransactionManager.INSTANCE)
                .trackingEventProcessorConfiguration(
                        TrackingEventProcessorConfiguration.forSingleThreadedProcessing().andBatchSize(50))
                .build();
    }

    /** The store threads' transaction manager, whose next begin on a store thread can be made to wait first. */
    private static final class HeldBegins implements TransactionManager {

        private final TransactionManager delegate;
        /** Nanoseconds the next store thread's begin waits; written by the test, taken by a store thread. */
        private final AtomicLong holdNextNanos = new AtomicLong();

        HeldBegins(TransactionManager delegate) {
            this.delegate = delegate;
        }

        void holdNext(Duration hold) {
            holdNextNanos.set(hold.toNanos());
        }

        @Override
        public Transaction startTransaction() {
            if (Thread.currentThread().getName().startsWith("ringbus-store")) {
                long hold = holdNextNanos.getAndSet(0);
                if (hold > 0) {
                    try {
                        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(hold));
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
            return delegate.startTransaction();
        }
    }
}
