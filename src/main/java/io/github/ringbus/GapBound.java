package io.github.ringbus;

import com.lmax.disruptor.Sequence;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * How far the store threads may store past one another's open transaction, so that a tracking processor never gives
 * up on an event that is still to be committed.
 * <p>
 * On a database, an event's global index is taken when it is inserted, and it becomes visible when its transaction
 * commits. Several store threads commit side by side, so a tracking processor sees gaps: events inserted, not yet
 * committed. Axon's {@code GapAwareTrackingToken} waits for a gap only until it is {@code maxGapOffset} (10,000 by
 * default) indexes behind the newest event it read; then it forgets the gap, and the event that fills it later is
 * never handled. {@code SimpleCommandBus} with several callers meets the same limit; ringbus's store threads would
 * make it easier to reach (one held commit, the others storing thousands of events a second).
 * <p>
 * So every store thread, before each transaction, reserves the events it is about to append on one counter, and
 * waits while its last event would be more than {@link #limit()} events past the first event of another store
 * thread's transaction still open. The limit is half the storage engine's {@code maxGapOffset}: the other half covers
 * what the counter cannot see exactly (the order in which side-by-side transactions really insert, indexes used by
 * rolled-back attempts are counted as reserved). Events stored by anyone else (another node, a thread outside the
 * ring) are not counted: they must stay within that margin, as on any bus.
 * <p>
 * <b>No deadlock:</b> reservations are disjoint and increasing, so the store thread whose open transaction began
 * first never waits (every other open mark is after its own events); a store thread waits only for one whose
 * transaction began before its own. A thread waiting for a transaction that stays open (a subscriber that blocks,
 * a database lock) waits as long, and says so in the log every {@link #WARN_EVERY_NANOS} of waiting.
 * <p>
 * Threads: {@link #open}, {@link #mayStore}, {@link #awaitTurn} and {@link #close} for a shard run on that shard's
 * store thread only. {@link #marks}{@code [shard]} is written by that thread only and read by every other store
 * thread; {@link #reserved} is added to by every store thread (one atomic add per transaction, not per command). Each
 * is a padded {@link Sequence}, so that store threads never share a cache line. Volatile reads and writes (and the
 * atomic add) give the sequential consistency the argument above needs.
 */
final class GapBound {

    private static final Logger logger = LoggerFactory.getLogger(GapBound.class);

    /** Axon's default {@code maxGapOffset}, assumed for an engine whose own cannot be read. */
    static final int AXON_DEFAULT_MAX_GAP_OFFSET = 10_000;
    /** A shard's mark while it has no transaction open. */
    private static final long NONE = Long.MAX_VALUE;
    private static final long PARK_NANOS = TimeUnit.MICROSECONDS.toNanos(50);
    static final long WARN_EVERY_NANOS = TimeUnit.SECONDS.toNanos(5);

    private final long limit;
    /** Events reserved by every store thread's transactions so far (rolled-back attempts included). */
    private final Sequence reserved = new Sequence(0);
    /** Per shard: the first reserved event of its open transaction, or NONE. Written by that shard's thread. */
    private final Sequence[] marks;
    private final String[] names;

    /**
     * @param limit the most events a store thread may store past another's open transaction's first event
     * @param names the store threads' names, by shard, for the log
     */
    GapBound(long limit, String[] names) {
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1, but was " + limit);
        }
        this.limit = limit;
        this.names = names.clone();
        this.marks = new Sequence[names.length];
        for (int i = 0; i < marks.length; i++) {
            marks[i] = new Sequence(NONE);
        }
    }

    /**
     * @param eventStore  the bus's event store
     * @param threadNames the store threads' names, by shard
     * @return the bound for that many store threads on that store; null when one store thread commits alone, or the
     * store's tracking tokens never skip a late commit (Axon's in-memory engine, Axon Server)
     */
    static GapBound forStore(EventStore eventStore, String[] threadNames) {
        if (threadNames.length < 2) {
            return null;
        }
        EventStorageEngine engine = AxonInternals.storageEngineOf(eventStore);
        if (AxonInternals.isGapFree(engine)) {
            return null;
        }
        int maxGapOffset = AxonInternals.maxGapOffsetOf(engine);
        GapBound bound = new GapBound(limitFor(maxGapOffset), threadNames);
        logger.info("{} store threads commit side by side: none stores more than {} events past another's open "
                            + "transaction, half the storage engine's maxGapOffset ({}), so that tracking processors "
                            + "skip none of its events", threadNames.length, bound.limit,
                    maxGapOffset < 1 ? AXON_DEFAULT_MAX_GAP_OFFSET + ", Axon's default: the engine's own cannot be read"
                                     : maxGapOffset);
        return bound;
    }

    /**
     * @param maxGapOffset the storage engine's {@code maxGapOffset}, or a value below 1 when it is not known
     * @return the limit for that engine: half its {@code maxGapOffset} (Axon's default when not known), at least 1
     */
    static long limitFor(int maxGapOffset) {
        int offset = maxGapOffset < 1 ? AXON_DEFAULT_MAX_GAP_OFFSET : maxGapOffset;
        return Math.max(1, offset / 2);
    }

    /** @return the most events a store thread may store past another's open transaction's first event */
    long limit() {
        return limit;
    }

    /**
     * Marks the shard's transaction open and reserves its events. Store thread of {@code shard} only.
     *
     * @return the reserved end (exclusive), for {@link #mayStore} and {@link #awaitTurn}
     */
    long open(int shard, int events) {
        // A lower bound first, so that a thread that reserves after this one's check never misses it (see class).
        marks[shard].setVolatile(reserved.get());
        long start = reserved.addAndGet(events) - events;
        marks[shard].setVolatile(start);
        return start + events;
    }

    /**
     * @param end what {@link #open} returned
     * @return true when the shard's reserved events end within the limit past every other shard's open transaction
     */
    boolean mayStore(int shard, long end) {
        return end - oldestOtherThan(shard) <= limit;
    }

    /**
     * Waits until the shard may store its reserved events ({@link #mayStore}). Store thread of {@code shard} only.
     * An interrupt does not end the wait (the events must not be stored before the other transaction ends); the
     * flag is kept for the caller.
     */
    void awaitTurn(int shard, long end) {
        if (mayStore(shard, end)) {
            return;
        }
        long began = System.nanoTime();
        long warnAt = began + WARN_EVERY_NANOS;
        boolean interrupted = false;
        while (!mayStore(shard, end)) {
            LockSupport.parkNanos(PARK_NANOS);
            interrupted |= Thread.interrupted(); // else parkNanos would return at once, a busy loop
            long now = System.nanoTime();
            if (now - warnAt >= 0) {
                warnAt = now + WARN_EVERY_NANOS;
                logger.warn("Store thread {} has waited {} ms for the open transaction of store thread {}: its next "
                                    + "events would be more than {} events past that transaction's, and a tracking "
                                    + "processor could then give up on them (Axon's maxGapOffset)",
                            names[shard], TimeUnit.NANOSECONDS.toMillis(now - began), names[oldestShardOtherThan(shard)],
                            limit);
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** The shard's transaction ended (committed, rolled back, or never began). Store thread of {@code shard} only. */
    void close(int shard) {
        marks[shard].setVolatile(NONE);
    }

    private long oldestOtherThan(int shard) {
        long oldest = NONE;
        for (int i = 0; i < marks.length; i++) {
            if (i != shard) {
                oldest = Math.min(oldest, marks[i].get());
            }
        }
        return oldest;
    }

    private int oldestShardOtherThan(int shard) {
        int oldest = shard;
        for (int i = 0; i < marks.length; i++) {
            if (i != shard && (oldest == shard || marks[i].get() < marks[oldest].get())) {
                oldest = i;
            }
        }
        return oldest;
    }
}
