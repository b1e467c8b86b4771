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
 * <p>
 * A request may also name one aggregate ({@link #request(Object, String)}): a command run whole on a ring thread that
 * stored events of it behind the ring's back ({@link OutsideRingRepository}). It raises a second volatile epoch and
 * records the aggregate with it; a holder that sees that epoch move looks its own aggregate up (one map read) and reads
 * it again only when it was named since the holder last looked. At most {@link #MOST_NAMED} aggregates wait to be
 * looked up (those of aggregates in no cache are never looked up): past that the request becomes one for every
 * aggregate, and the names are dropped.
 * <p>
 * Tests: {@code CacheEvictionTest}, {@code postgres.TransactionalHandlerTest}.
 */
final class CacheEvictions {

    /** How many named aggregates may wait to be looked up before a request names every aggregate instead. */
    static final int MOST_NAMED = 10_000;

    /** An aggregate by its repository's type and identifier. */
    private record Named(Object type, String identifier) {
    }

    /** The named aggregates, each with the named epoch its request raised; written under this object's lock. */
    private final java.util.concurrent.ConcurrentHashMap<Named, Long> named = new java.util.concurrent.ConcurrentHashMap<>();
    private volatile long namedEpoch;

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

    /**
     * Asks for one aggregate to be read from the store again before its next command; any thread.
     *
     * @param type       its repository's aggregate type
     * @param identifier its identifier
     */
    synchronized void request(Object type, String identifier) {
        if (named.size() >= MOST_NAMED) {
            named.clear();
            epoch++;
            return;
        }
        long next = namedEpoch + 1;
        named.put(new Named(type, identifier), next); // before the epoch's volatile write, which publishes it
        namedEpoch = next;
    }

    /**
     * @return how many requests named one aggregate so far
     */
    long namedEpoch() {
        return namedEpoch;
    }

    /**
     * On the thread of the aggregate's holder, after it saw {@link #namedEpoch()} move: whether a request named the
     * aggregate after {@code seen}; such a request is then answered (forgotten).
     */
    boolean namedSince(Object type, String identifier, long seen) {
        Named key = new Named(type, identifier); // allocated only after a named request, never per plain command
        Long at = named.get(key);
        if (at == null || at <= seen) {
            return false;
        }
        named.remove(key, at);
        return true;
    }
}
