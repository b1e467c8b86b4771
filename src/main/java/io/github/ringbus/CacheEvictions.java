package io.github.ringbus;

/**
 * Requests to read a bus's aggregates from the event store again, made on any thread
 * ({@link RingCommandBus#evictCachedAggregates()}).
 * <p>
 * A request raises a volatile epoch. The handle stage, the only thread that touches an aggregate, compares it with the
 * epoch its aggregate was last read at before each command ({@link AggregateHolder#beginCommand}) and reads it again
 * when they differ. The volatile write and read order the request before the read: a command handled after
 * {@link #request()} returned sees the aggregate as the store has it then, plus this node's own events still on their
 * way to the store. One volatile read per command; nothing else on the hot path.
 * <p>
 * Tests: {@code CacheEvictionTest}.
 */
final class CacheEvictions {

    /** Never raised: for repositories built without a bus (tests). */
    static final CacheEvictions NONE = new CacheEvictions();

    private volatile long epoch;

    /** Asks for every aggregate to be read from the store again before its next command; any thread. */
    synchronized void request() {
        epoch++;
    }

    /**
     * @return how many evictions were requested so far
     */
    long epoch() {
        return epoch;
    }
}
