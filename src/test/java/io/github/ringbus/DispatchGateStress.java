package io.github.ringbus;

import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The shutdown handshake of {@link DispatchGate}: a dispatcher enters while shutdown closes the gate and checks that
 * nobody is inside. r1: the dispatcher got in (1) or was refused (0); r2: shutdown saw the gate empty (1) or not (0).
 */
public final class DispatchGateStress {

    private DispatchGateStress() {
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

        private final DispatchGate gate = new DispatchGate();

        public EnterWhileClosing() {
            gate.open();
        }

        @Actor
        public void dispatcher(II_Result r) {
            r.r1 = gate.enter() ? 1 : 0;
        }

        @Actor
        public void shutdown(II_Result r) {
            gate.close();
            r.r2 = gate.isEmpty() ? 1 : 0;
        }
    }

    @JCStressTest
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE, desc = "Both dispatchers got in and the gate shows it.")
    @Outcome(id = "1, 1, 0", expect = FORBIDDEN, desc = "Two dispatchers inside, yet the gate reads empty.")
    @Outcome(expect = FORBIDDEN, desc = "An open gate refused a dispatcher.")
    @State
    public static class TwoDispatchersInside {

        private final DispatchGate gate = new DispatchGate();

        public TwoDispatchersInside() {
            gate.open();
        }

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
            r.r3 = gate.isEmpty() ? 0 : 1;
        }
    }
}
