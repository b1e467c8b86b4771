package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The preload stage's cache: least recently used out, but never an aggregate with a command still in the ring (its
 * last slot after the sequence up to which every command completed).
 */
class AggregateCacheTest {

    private final AtomicLong completed = new AtomicLong(-1);

    private static AggregateHolder<Object> holderReferencedBy(String identifier, long slotSequence) {
        AggregateHolder<Object> holder = new AggregateHolder<>(null, identifier);
        holder.referencedBy(slotSequence);
        return holder;
    }

    @Test
    void beyondItsBoundTheLeastRecentlyUsedSettledAggregateIsEvicted() {
        AggregateCache<AggregateHolder<Object>> cache = new AggregateCache<>(2, completed::get);
        completed.set(100);
        cache.put("a", holderReferencedBy("a", 1));
        cache.put("b", holderReferencedBy("b", 2));
        cache.get("a");

        cache.put("c", holderReferencedBy("c", 3));

        assertThat(cache.get("b")).isNull();
        assertThat(cache.get("a")).isNotNull();
        assertThat(cache.get("c")).isNotNull();
        assertThat(cache.size()).isEqualTo(2);
    }

    @Test
    void anAggregateWithACommandStillInTheRingIsNeverEvicted() {
        AggregateCache<AggregateHolder<Object>> cache = new AggregateCache<>(1, completed::get);
        completed.set(5);
        cache.put("in-flight", holderReferencedBy("in-flight", 10));

        cache.put("settled", holderReferencedBy("settled", 3));

        assertThat(cache.get("in-flight")).as("its command at slot 10 has not completed (completed: 5)").isNotNull();
        assertThat(cache.size()).isEqualTo(1);
    }

    @Test
    void onceItsLastCommandCompletedTheAggregateMayBeEvicted() {
        AggregateCache<AggregateHolder<Object>> cache = new AggregateCache<>(1, completed::get);
        completed.set(5);
        cache.put("a", holderReferencedBy("a", 10));
        completed.set(10);

        cache.put("b", holderReferencedBy("b", 11));

        assertThat(cache.get("a")).isNull();
        assertThat(cache.get("b")).isNotNull();
    }

    @Test
    void theCacheHoldsMoreThanItsBoundWhileEveryAggregateHasACommandInFlight() {
        AggregateCache<AggregateHolder<Object>> cache = new AggregateCache<>(1, completed::get);
        cache.put("a", holderReferencedBy("a", 0));
        cache.put("b", holderReferencedBy("b", 1));
        cache.put("c", holderReferencedBy("c", 2));

        assertThat(cache.size()).isEqualTo(3);
    }
}
