package io.github.ringbus;

import com.lmax.disruptor.Sequence;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Eviction against the complete stage's sequence: the preload stage evicts a cached aggregate only when every slot
 * that refers to it has completed, and then loads it from the store. It must never evict on a completion it sees
 * before the events of that completion are stored, or it would reload stale state.
 */
public final class AggregateCacheStress {

    private AggregateCacheStress() {
    }

    @JCStressTest
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "Slot 0 not complete: the aggregate stays cached.")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Stored, completion not yet seen: stays cached.")
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "Evicted after slot 0 completed; its events are visible.")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
             desc = "Evicted while slot 0's events are not visible: the next load would miss them.")
    @State
    public static class EvictionWaitsForCompletion {

        /** The complete stage's sequence, as the Disruptor keeps it (release on set, acquire on get). */
        private final Sequence completed = new Sequence(-1);
        private final AggregateCache<AggregateHolder<Object>> cache = new AggregateCache<>(1, completed::get);
        /** Stands for slot 0's events in the store: written by the store stage before the slot completes. */
        private int storedEvents;

        {
            AggregateHolder<Object> inFlight = new AggregateHolder<>(null, "a");
            inFlight.referencedBy(0);
            cache.put("a", inFlight);
        }

        @Actor
        public void storeThenComplete() {
            storedEvents = 1;
            completed.set(0);
        }

        @Actor
        public void preloadStage(II_Result r) {
            AggregateHolder<Object> other = new AggregateHolder<>(null, "b");
            other.referencedBy(1);
            cache.put("b", other); // over the bound: evicts "a" if slot 0 has completed
            boolean evicted = cache.get("a") == null;
            r.r1 = evicted ? 1 : 0;
            r.r2 = storedEvents; // what a reload of "a" would find
        }
    }
}
