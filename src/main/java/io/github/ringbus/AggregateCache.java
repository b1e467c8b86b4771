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
 */
final class AggregateCache<T> {

    /** How many of the least recently used entries one eviction pass looks at; bounds the cost of a miss. */
    private static final int EVICTION_SCAN = 64;

    private final LinkedHashMap<String, AggregateHolder<T>> holders;
    private final int maximumSize;
    private final LongSupplier completedSequence;

    AggregateCache(int maximumSize, LongSupplier completedSequence) {
        this.maximumSize = maximumSize;
        this.completedSequence = completedSequence;
        this.holders = new LinkedHashMap<>(Math.min(maximumSize, 1 << 16) * 4 / 3 + 1, 0.75f, true);
    }

    AggregateHolder<T> get(String identifier) {
        return holders.get(identifier);
    }

    /** @return true when the aggregate is cached; leaves the order of eviction as it is */
    boolean contains(String identifier) {
        return holders.containsKey(identifier);
    }

    void put(String identifier, AggregateHolder<T> holder) {
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
        Iterator<AggregateHolder<T>> eldestFirst = holders.values().iterator();
        for (int scanned = 0; scanned < EVICTION_SCAN && holders.size() > maximumSize && eldestFirst.hasNext();
             scanned++) {
            if (eldestFirst.next().lastSlotSequence() <= completed) {
                eldestFirst.remove();
            }
        }
    }
}
