package io.github.ringbus;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.ZZZZ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Two store threads open a transaction at once, each of more events than {@link GapBound}'s limit, and ask whether
 * they may store (the actors), then ask again once both have opened (the arbiter, as {@link GapBound#awaitTurn}
 * asks again while it waits). At once, at most one may: both allowed would store one past the other's open
 * transaction by more than the limit, unseen. Both may be refused at once (one saw the other's provisional mark),
 * but once both have opened exactly one may store, the one that reserved first: both refused then is a deadlock.
 */
@JCStressTest
@Outcome(id = {"true, false, true, false", "false, true, false, true", "false, false, true, false",
        "false, false, false, true"}, expect = ACCEPTABLE,
         desc = "The thread that reserved first stores, at once or when it asks again; the other waits for it.")
@Outcome(id = "true, true, .*, .*", expect = FORBIDDEN, desc = "Both store at once: one past the other's open "
        + "transaction by more than the limit.")
@Outcome(id = ".*, .*, false, false", expect = FORBIDDEN, desc = "Once both opened, each waits for the other: a "
        + "deadlock.")
@Outcome(expect = FORBIDDEN, desc = "Anything else: a thread refused once both opened though it was allowed before, "
        + "or both allowed.")
@State
public class GapBoundStress {

    private final GapBound bound = new GapBound(10, new String[]{"store-0", "store-1"});

    private long firstEnd;
    private long secondEnd;

    @Actor
    public void first(ZZZZ_Result r) {
        firstEnd = bound.open(0, 20);
        r.r1 = bound.mayStore(0, firstEnd);
    }

    @Actor
    public void second(ZZZZ_Result r) {
        secondEnd = bound.open(1, 20);
        r.r2 = bound.mayStore(1, secondEnd);
    }

    @Arbiter
    public void once(ZZZZ_Result r) {
        r.r3 = bound.mayStore(0, firstEnd);
        r.r4 = bound.mayStore(1, secondEnd);
    }
}
