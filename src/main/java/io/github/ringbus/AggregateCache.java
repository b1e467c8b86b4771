package io.github.ringbus;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.function.LongSupplier;

/**
 * The bounded, least-recently-used cache of one aggregate type's holders, owned by the preload stage's thread alone.
 * <p>
 * A hit allocates nothing. An aggregate whose commands are still in the ring is never evicted, so the preload stage
 * never reloads an aggregate from the store while events of it are on their way there; the cache may therefore hold
 * more than its bound for a moment, by at most the number of aggregates in flight (no more than the ring's size).
 * Not thread-safe: only the preload stage calls it.
 *
 * @param <H> what it holds: an aggregate's holder ({@link Entry}); it needs no more of it than its last slot
 */
final class AggregateCache<H extends AggregateCache.Entry> {

    /** What the cache needs of an entry to know whether it may be evicted. */
    interface Entry {

        /** @return the ring sequence of the last slot whose command uses the entry's aggregate */
        long lastSlotSequence();
    }

    /** How many of the least recently used entries one eviction pass looks at; bounds the cost of a miss. */
    private static final int EVICTION_SCAN = 64;

    private final LinkedHashMap<String, H> holders;
    private final int maximumSize;
    private final LongSupplier completedSequence;

    AggregateCache(int maximumSize, LongSupplier completedSequence) {
        this.maximumSize = maximumSize;
        this.completedSequence = completedSequence;
        this.holders = new LinkedHashMap<>(Math.min(maximumSize, 1 << 16) * 4 / 3 + 1, 0.75f, true);
    }

    H get(String identifier) {
        return holders.get(identifier);
    }

    /** @return true when the aggregate is cached; leaves the order of eviction as it is */
    boolean contains(String identifier) {
        return holders.containsKey(identifier);
    }

    void put(String identifier, H holder) {
        holders.put(identifier, holder);
        if (holders.size() > maximumSize) {
            evictSettled();
        }
    }

    int size() {
        return holders.size();
    }

    private void evictSettled() {
        long completed = completedSequence.getAsLong();
        Iterator<H> eldestFirst = holders.values().iterator();
        for (int scanned = 0; scanned < EVICTION_SCAN && holders.size() > maximumSize && eldestFirst.hasNext();
             scanned++) {
            if (eldestFirst.next().lastSlotSequence() <= completed) {
                eldestFirst.remove();
            }
        }
    }
}
