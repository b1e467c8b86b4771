package io.github.ringbus;

import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.common.transaction.NoTransactionManager;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link GapBound}: a store thread stores no more than the limit past another store thread's open transaction, the
 * store thread whose transaction began first never waits, and the limit follows the storage engine's maxGapOffset.
 */
class GapBoundTest {

    private static final String[] THREE = {"store-0", "store-1", "store-2"};

    @Test
    void aStoreThreadAloneNeverWaits() {
        GapBound bound = new GapBound(100, THREE);
        for (int i = 0; i < 50; i++) {
            long end = bound.open(0, 1_000);
            assertThat(bound.mayStore(0, end)).isTrue();
            bound.close(0);
        }
    }

    @Test
    void aStoreThreadMayStoreUpToTheLimitPastAnothersOpenTransaction() {
        GapBound bound = new GapBound(100, THREE);
        bound.open(0, 10); // held open: events 0..9
        assertThat(bound.mayStore(1, bound.open(1, 90))).as("events up to 100").isTrue();
        bound.close(1);
        assertThat(bound.mayStore(1, bound.open(1, 1))).as("event 101").isFalse();
    }

    @Test
    void aStoreThreadPastTheLimitMayStoreOnceTheOtherTransactionEnds() {
        GapBound bound = new GapBound(100, THREE);
        bound.open(0, 10);
        long end = bound.open(1, 500);
        assertThat(bound.mayStore(1, end)).isFalse();
        bound.close(0);
        assertThat(bound.mayStore(1, end)).isTrue();
    }

    @Test
    void theStoreThreadWhoseTransactionBeganFirstNeverWaitsWhateverItsSize() {
        GapBound bound = new GapBound(100, THREE);
        long first = bound.open(0, 5_000);
        long second = bound.open(1, 5_000);
        long third = bound.open(2, 5_000);
        assertThat(bound.mayStore(0, first)).isTrue();
        assertThat(bound.mayStore(1, second)).isFalse();
        assertThat(bound.mayStore(2, third)).isFalse();
        bound.close(0);
        assertThat(bound.mayStore(1, second)).as("now the first").isTrue();
    }

    @Test
    void awaitTurnReturnsWhenTheOtherTransactionEnds() throws Exception {
        GapBound bound = new GapBound(100, THREE);
        bound.open(0, 10);
        long end = bound.open(1, 500);
        CompletableFuture<Void> waiting = CompletableFuture.runAsync(() -> bound.awaitTurn(1, end));
        Thread.sleep(100);
        assertThat(waiting).isNotDone();
        bound.close(0);
        waiting.get(10, TimeUnit.SECONDS);
    }

    @Test
    void anInterruptDoesNotEndTheWaitAndIsKept() throws Exception {
        GapBound bound = new GapBound(100, THREE);
        bound.open(0, 10);
        long end = bound.open(1, 500);
        boolean[] interruptedAfter = new boolean[1];
        Thread waiter = new Thread(() -> {
            bound.awaitTurn(1, end);
            interruptedAfter[0] = Thread.currentThread().isInterrupted();
        });
        waiter.start();
        Thread.sleep(50);
        waiter.interrupt();
        Thread.sleep(100);
        assertThat(waiter.isAlive()).as("still waiting after the interrupt").isTrue();
        bound.close(0);
        waiter.join(10_000);
        assertThat(interruptedAfter[0]).as("the flag kept for the caller").isTrue();
    }

    @Test
    void theLimitIsHalfTheEnginesMaxGapOffsetOrHalfAxonsDefault() {
        assertThat(GapBound.limitFor(10_000)).isEqualTo(5_000);
        assertThat(GapBound.limitFor(100_000)).isEqualTo(50_000);
        assertThat(GapBound.limitFor(-1)).isEqualTo(5_000);
        assertThat(GapBound.limitFor(1)).isEqualTo(1);
    }

    @Test
    void oneStoreThreadOrAnEngineWithoutGapsNeedsNoBound() {
        EmbeddedEventStore inMemory = EmbeddedEventStore.builder()
                                                        .storageEngine(new InMemoryEventStorageEngine()).build();
        try {
            assertThat(GapBound.forStore(inMemory, THREE)).isNull();
            assertThat(GapBound.forStore(inMemory, new String[]{"store-0"})).isNull();
        } finally {
            inMemory.shutDown();
        }
    }

    @Test
    void severalStoreThreadsOnAxonsJdbcEngineAreBoundByHalfItsMaxGapOffset() {
        JdbcEventStorageEngine engine = JdbcEventStorageEngine.builder()
                                                              .connectionProvider(() -> {
                                                                  throw new IllegalStateException("not connected");
                                                              })
                                                              .transactionManager(NoTransactionManager.INSTANCE)
                                                              .maxGapOffset(30_000)
                                                              .build();
        RingEventStore store = RingEventStore.builder().storageEngine(engine).build();
        assertThat(GapBound.forStore(store, THREE).limit()).isEqualTo(15_000);
        assertThat(GapBound.forStore(store, new String[]{"store-0"})).isNull();
    }

    @Test
    void aLimitBelowOneIsRefused() {
        assertThatThrownBy(() -> new GapBound(0, THREE)).isInstanceOf(IllegalArgumentException.class)
                                                         .hasMessageContaining("limit must be at least 1");
    }
}
