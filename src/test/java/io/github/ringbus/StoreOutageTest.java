package io.github.ringbus;

import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.fixtures.LoggedLines;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.SQLTransientConnectionException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The store while it cannot be reached ({@link StoreOutage}), on a store stage without a ring: after an attempt whose
 * transaction could not begin for want of a connection, batches fail at once without being tried, every command with
 * the store's failure; a probe ends the outage once a transaction begins again, and the next batch is stored.
 */
class StoreOutageTest {

    private final FaultyStorageEngine engine = new FaultyStorageEngine();
    private final RingEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
    private final PoolWithoutServer pool = new PoolWithoutServer();
    private final FailFastReads reads = new FailFastReads(pool);
    private final StoreOutage outage = new StoreOutage(pool, reads, "test-store-probe");
    private final StoreStage stage = new StoreStage(eventStore, eventStore, pool, 1024, PipelineMonitor.NONE, true,
                                                    new LeftInterrupts(), new IsolatingStoreRecovery(false),
                                                    new ReRuns(1), null, 0, outage, null);
    private long sequence;

    @AfterEach
    void shutdown() {
        outage.close();
        eventStore.shutDown();
    }

    @Test
    void aBatchAfterOneWhoseTransactionCouldNotBeginForWantOfAConnectionFailsAtOnceWithoutBeingTried() {
        pool.serverAway.set(true);
        storeAsOneBatch(batch("a", "b"));
        int begunSoFar = pool.begins.get();

        List<CommandSlot> next = batch("c", "d");
        storeAsOneBatch(next);

        assertThat(pool.begins).as("transactions begun for the batch after").hasValue(begunSoFar);
        assertThat(next).allSatisfy(slot -> assertThat(slot.storeFailure).isInstanceOf(EventStoreException.class)
                                                                          .hasMessageContaining("could not be reached")
                                                                          .hasMessageContaining("Connection is not "
                                                                                                + "available"));
        assertThat(next.get(0).storeFailure).hasMessageContaining("on aggregate [c]");
        assertThat(engine.storedAppends()).isEmpty();
    }

    @Test
    void theProbeEndsTheOutageOnceATransactionBeginsAndTheNextBatchIsStored() {
        pool.serverAway.set(true);
        storeAsOneBatch(batch("a"));
        assertThat(outage.failure()).isNotNull();

        pool.serverAway.set(false);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (outage.failure() != null && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        List<CommandSlot> next = batch("b");
        storeAsOneBatch(next);

        assertThat(outage.failure()).as("the outage, once the probe began a transaction").isNull();
        assertThat(next.get(0).storeFailure).isNull();
        assertThat(engine.storedAppends()).containsExactly(List.of("b"));
    }

    @Test
    void anOutageIsSaidOnceInTheLogWhenItBeginsAndOnceWhenItEnds() {
        List<String> logged = LoggedLines.whileRunning(() -> {
            pool.serverAway.set(true);
            storeAsOneBatch(batch("a"));
            storeAsOneBatch(batch("b", "c"));
            pool.serverAway.set(false);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (outage.failure() != null && System.nanoTime() < deadline) {
                Thread.onSpinWait();
            }
        });

        assertThat(logged).filteredOn(line -> line.contains("io.github.ringbus.StoreOutage")).satisfiesExactly(
                began -> assertThat(began).contains(" WARN ").contains("could not be reached")
                                          .contains("Connection is not available"),
                ended -> assertThat(ended).contains(" INFO ").contains("reachable again")
                                          .contains("2 command(s) failed at once meanwhile"));
    }

    @Test
    void anOutageIsAFailureNowForTheHealthChecksThoughNoCommandTriedTheStoreSince() {
        pool.serverAway.set(true);
        storeAsOneBatch(batch("a"));

        StoreFailure later = outage.failure(System.nanoTime() + TimeUnit.MINUTES.toNanos(1));

        assertThat(later.failingFor()).isGreaterThanOrEqualTo(java.time.Duration.ofMinutes(1));
        assertThat(later.sinceLastFailure()).isZero();
        assertThat(later.lastFailure()).contains("Connection is not available");
        assertThat(new StoreOutage(pool, reads, "unused").failure(System.nanoTime())).isNull();
    }

    @Test
    void readsFailAtOnceDuringAnOutageOfTheStore() {
        pool.serverAway.set(true);
        storeAsOneBatch(batch("a"));
        pool.serverAway.set(false); // a read that tried would begin; it must not try

        assertThatThrownBy(() -> reads.reads().startTransaction()).isInstanceOf(EventStoreException.class)
                                                                 .hasMessageContaining("reads fail at once");
    }

    @Test
    void aConnectionLostUnderAnAppendStartsNoOutageAndTheNextBatchIsTried() {
        engine.failNextAppendUnreachable();
        storeAsOneBatch(batch("a"));

        List<CommandSlot> next = batch("b");
        storeAsOneBatch(next);

        assertThat(outage.failure()).isNull();
        assertThat(next.get(0).storeFailure).isNull();
        assertThat(engine.storedAppends()).containsExactly(List.of("b"));
    }

    @Test
    void aTransactionThatCouldNotBeginForAnotherReasonStartsNoOutage() {
        pool.refuseOtherwise.set(true);
        storeAsOneBatch(batch("a"));

        assertThat(outage.failure()).isNull();
    }

    @Test
    void withoutATransactionManagerNoOutageBegins() {
        StoreOutage none = new StoreOutage(NoTransactionManager.INSTANCE, reads, "unused");

        none.beginFailed(new SQLTransientConnectionException("Connection is not available"));

        assertThat(none.failure()).isNull();
    }

    @Test
    void onceClosedTheProbeStopsAndNoOutageBegins() throws InterruptedException {
        pool.serverAway.set(true);
        storeAsOneBatch(batch("a"));
        outage.close();
        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(StoreOutage.PROBE_EVERY_NANOS) * 3);
        int begins = pool.begins.get();

        Thread.sleep(TimeUnit.NANOSECONDS.toMillis(StoreOutage.PROBE_EVERY_NANOS) * 3);

        assertThat(pool.begins).as("probes after close").hasValue(begins);
        assertThat(Thread.getAllStackTraces().keySet()).noneMatch(t -> t.getName().equals("test-store-probe"));
    }

    /** A handled command whose one event is {@code payload}, as the handle stage leaves its slot. */
    private CommandSlot handled(String payload) {
        CommandSlot slot = new CommandSlot(eventStore);
        slot.command = GenericCommandMessage.asCommandMessage(payload);
        slot.events.add(new GenericDomainEventMessage<>("Account", payload, 0, payload));
        return slot;
    }

    private List<CommandSlot> batch(String... payloads) {
        List<CommandSlot> slots = new ArrayList<>();
        for (String payload : payloads) {
            slots.add(handled(payload));
        }
        return slots;
    }

    private void storeAsOneBatch(List<CommandSlot> slots) {
        for (int i = 0; i < slots.size(); i++) {
            stage.onEvent(slots.get(i), sequence++, i == slots.size() - 1);
        }
    }

    /**
     * A connection pool whose server can go away: while away, no transaction begins, with what HikariCP says once its
     * connection timeout passed (wrapped as Spring's transaction managers wrap it). Counts the transactions begun.
     */
    private static final class PoolWithoutServer implements TransactionManager {

        final AtomicBoolean serverAway = new AtomicBoolean();
        final AtomicBoolean refuseOtherwise = new AtomicBoolean();
        final AtomicInteger begins = new AtomicInteger();

        @Override
        public Transaction startTransaction() {
            begins.incrementAndGet();
            if (serverAway.get()) {
                throw new IllegalStateException("Could not open JDBC Connection for transaction",
                                                new SQLTransientConnectionException(
                                                        "HikariPool-1 - Connection is not available, request timed "
                                                                + "out after 30000ms."));
            }
            if (refuseOtherwise.get()) {
                throw new IllegalStateException("read-only transaction refused");
            }
            return new Transaction() {
                @Override
                public void commit() {
                }

                @Override
                public void rollback() {
                }
            };
        }
    }
}
