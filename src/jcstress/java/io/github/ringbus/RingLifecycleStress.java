package io.github.ringbus;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.I_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import java.time.Duration;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The gate of {@link RingLifecycle}: a dispatcher enters while shutdown closes the gate and checks that nobody is
 * inside (shutdown's first two steps). r1: the dispatcher got in (1) or was refused (0); r2: shutdown saw nobody
 * inside (1) or someone (0).
 */
public final class RingLifecycleStress {

    private RingLifecycleStress() {
    }

    /** A running lifecycle whose stages do nothing: the gate is all that is under test. */
    static RingLifecycle running() {
        RingLifecycle lifecycle = idle();
        lifecycle.start();
        return lifecycle;
    }

    /** A lifecycle not yet started whose stages do nothing. */
    static RingLifecycle idle() {
        return new RingLifecycle(new RingStages() {
            @Override
            public void start() {
            }

            @Override
            public void drainAndStop(long timeoutNanos) {
            }

            @Override
            public void completeUnfinished() {
            }
        }, Duration.ofSeconds(1), () -> {
        });
    }

    @JCStressTest
    @Outcome(id = "1, 0", expect = ACCEPTABLE, desc = "Dispatcher got in first; shutdown sees it inside and waits.")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Shutdown closed first; the dispatcher was refused.")
    @Outcome(id = "0, 0", expect = ACCEPTABLE,
             desc = "Dispatcher refused, but shutdown looked while it was backing out: shutdown waits a little.")
    @Outcome(id = "1, 1", expect = FORBIDDEN,
             desc = "Dispatcher got in and will publish, yet shutdown saw nobody inside: the command would be lost.")
    @State
    public static class EnterWhileClosing {

        private final RingLifecycle gate = running();

        @Actor
        public void dispatcher(II_Result r) {
            r.r1 = gate.enter() ? 1 : 0;
        }

        @Actor
        public void shutdown(II_Result r) {
            gate.closeGate();
            r.r2 = gate.nobodyInside() ? 1 : 0;
        }
    }

    @JCStressTest
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE, desc = "Both dispatchers got in and the gate shows it.")
    @Outcome(id = "1, 1, 0", expect = FORBIDDEN, desc = "Two dispatchers inside, yet the gate reads empty.")
    @Outcome(expect = FORBIDDEN, desc = "An open gate refused a dispatcher.")
    @State
    public static class TwoDispatchersInside {

        private final RingLifecycle gate = running();

        @Actor
        public void first(III_Result r) {
            r.r1 = gate.enter() ? 1 : 0;
        }

        @Actor
        public void second(III_Result r) {
            r.r2 = gate.enter() ? 1 : 0;
        }

        @Arbiter
        public void check(III_Result r) {
            r.r3 = gate.nobodyInside() ? 0 : 1;
        }
    }

    /**
     * A stage thread closes the gate (a handler or callback that shuts the bus down, see
     * {@code RingLifecycle.shutdownAfterThisStage}) while {@code start()} opens it after starting the stage threads.
     * r1: the gate reads open (1) or closed (0) once both are done.
     */
    @JCStressTest
    @Outcome(id = "0", expect = ACCEPTABLE, desc = "The gate stays closed: the bus is shutting down.")
    @Outcome(id = "1", expect = FORBIDDEN,
             desc = "start() opened the gate after a stage thread closed it: commands let into a ring being shut down.")
    @State
    public static class GateClosedFromAStageStaysClosed {

        private final RingLifecycle gate = idle();

        @Actor
        public void starter() {
            try {
                gate.start();
            } catch (IllegalStateException closedFirst) {
                // The gate closed before start() looked: a bus that is shutting down is not started.
            }
        }

        @Actor
        public void stageThread() {
            gate.closeGate();
        }

        @Arbiter
        public void check(I_Result r) {
            r.r1 = gate.state() == RingLifecycle.State.RUNNING ? 1 : 0;
        }
    }
}
