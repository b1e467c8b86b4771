package io.github.ringbus;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.JJ_Result;
import org.openjdk.jcstress.infra.results.ZZ_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The hand-offs of a {@link ReRuns.Request} between the store thread that asks for a re-run and the handler thread
 * that runs it.
 */
public class ReRunRequestStress {

    private ReRunRequestStress() {
    }

    /**
     * The handler thread takes the request on, writes the slot (plain fields, as handling a command does) and
     * finishes it; the store thread that sees the request finished must see what was written in the slot, never the
     * slot as it was before: the request's release (finish) and acquire (finished) order the plain writes of the
     * slot before the store thread's reads.
     */
    @JCStressTest
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "Not finished yet: the slot is not read.")
    @Outcome(id = "1, 42", expect = ACCEPTABLE, desc = "Finished: the slot as the handler thread wrote it.")
    @Outcome(id = "1, 7", expect = FORBIDDEN, desc = "Finished, but the slot as it was before the re-run.")
    @Outcome(expect = FORBIDDEN, desc = "Anything else.")
    @State
    public static class SlotSeenAfterFinish {

        private final CommandSlot slot = new CommandSlot(null);
        private final ReRuns.Request request = new ReRuns.Request(null, 0);

        public SlotSeenAfterFinish() {
            slot.handledNanos = 7;
        }

        @Actor
        public void handlerThread() {
            if (request.start()) {
                slot.handledNanos = 42;
                request.finish(true);
            }
        }

        @Actor
        public void storeThread(JJ_Result result) {
            if (request.finished()) {
                result.r1 = 1;
                result.r2 = slot.handledNanos;
            }
        }
    }

    /**
     * A bus that stops cancels the request its store thread waits on while the handler thread takes it on: exactly
     * one of them wins, so a cancelled request is never run and a request taken on is always waited for.
     */
    @JCStressTest
    @Outcome(id = "true, false", expect = ACCEPTABLE, desc = "The handler thread took it on; the cancel failed.")
    @Outcome(id = "false, true", expect = ACCEPTABLE, desc = "Cancelled; the handler thread skips it.")
    @Outcome(expect = FORBIDDEN, desc = "Both or neither.")
    @State
    public static class CancelAgainstStart {

        private final ReRuns.Request request = new ReRuns.Request(null, 0);

        @Actor
        public void handlerThread(ZZ_Result result) {
            result.r1 = request.start();
        }

        @Actor
        public void stoppingStoreThread(ZZ_Result result) {
            result.r2 = request.cancel();
        }
    }
}
