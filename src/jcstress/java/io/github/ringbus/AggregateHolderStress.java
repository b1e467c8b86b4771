package io.github.ringbus;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.II_Result;
import org.openjdk.jcstress.infra.results.I_Result;
import org.openjdk.jcstress.infra.results.JJ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The hand-offs of {@link AggregateHolder} between the store stage and the handle stage that owns the aggregate: how
 * far the aggregate's events are stored, and which generation of its state is poisoned. The store stage's plain
 * writes before each (the append it made, the failure it recorded) stand for everything the handle stage relies on
 * once it sees the mark.
 */
public final class AggregateHolderStress {

    private AggregateHolderStress() {
    }

    static AggregateHolder<Object> holder() {
        return new AggregateHolder<>(null, "aggregate-1");
    }

    @JCStressTest
    @Outcome(id = "-1, -1", expect = ACCEPTABLE, desc = "The handle stage looked before the append: keeps its copy.")
    @Outcome(id = "-1, 3", expect = ACCEPTABLE, desc = "Append seen, mark not yet: keeps its copy, harmless.")
    @Outcome(id = "3, 3", expect = ACCEPTABLE, desc = "Mark and append seen: drops its copy, reads the store.")
    @Outcome(id = "3, -1", expect = FORBIDDEN,
             desc = "Stored up to 3 seen, the append not: the handle stage would drop events it cannot read back.")
    @State
    public static class StoredSequencePublishesTheAppend {

        private final AggregateHolder<Object> holder = holder();
        private long appendedUpTo = -1;

        @Actor
        public void storeStage() {
            appendedUpTo = 3;
            holder.storedUpTo(3);
        }

        @Actor
        public void handleStage(JJ_Result r) {
            r.r1 = holder.storedSequenceNumber();
            r.r2 = appendedUpTo;
        }
    }

    @JCStressTest
    @Outcome(id = "-1, 0", expect = ACCEPTABLE, desc = "Not poisoned yet: the command runs on generation 0.")
    @Outcome(id = "-1, 1", expect = ACCEPTABLE, desc = "Failure recorded, mark not yet seen: caught next command.")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Poisoned, and the failed append seen: rebuilds from store.")
    @Outcome(id = "0, 0", expect = FORBIDDEN,
             desc = "Generation 0 seen poisoned, but not the failure that poisoned it.")
    @State
    public static class PoisonPublishesTheFailure {

        private final AggregateHolder<Object> holder = holder();
        private int failedAppends;

        @Actor
        public void storeStage() {
            failedAppends = 1;
            holder.poison(0);
        }

        @Actor
        public void handleStage(II_Result r) {
            r.r1 = holder.poisonedGeneration();
            r.r2 = failedAppends;
        }
    }

    @JCStressTest
    @Outcome(id = "5", expect = ACCEPTABLE, desc = "The highest generation given up wins, whoever came last.")
    @Outcome(expect = FORBIDDEN, desc = "A lower generation overwrote a higher one: later commands of generation "
            + "3..5 would be stored on a state the store never had.")
    @State
    public static class PoisonFromBothStagesKeepsTheHighest {

        private final AggregateHolder<Object> holder = holder();

        @Actor
        public void storeStage() {
            holder.poison(5);
        }

        @Actor
        public void handleStage() {
            holder.poison(2);
        }

        @Arbiter
        public void check(I_Result r) {
            r.r1 = holder.poisonedGeneration();
        }
    }

    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "Both stages' generations recorded: the highest stands.")
    @Outcome(expect = FORBIDDEN, desc = "A generation once poisoned reads as healthy again.")
    @State
    public static class PoisonedStaysPoisoned {

        private final AggregateHolder<Object> holder = holder();

        @Actor
        public void storeStage() {
            holder.poison(1);
        }

        @Actor
        public void handleStage() {
            holder.poison(0);
        }

        @Arbiter
        public void check(II_Result r) {
            r.r1 = holder.isPoisoned(0) ? 1 : 0;
            r.r2 = holder.isPoisoned(1) ? 1 : 0;
        }
    }
}
