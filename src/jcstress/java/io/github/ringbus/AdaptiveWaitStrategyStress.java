package io.github.ringbus;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Mode;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.Signal;
import org.openjdk.jcstress.annotations.State;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * The wake-up of {@link AdaptiveWaitStrategy}: a stage thread blocks on an empty ring while a dispatcher claims the
 * sequence it waits for and hands it over. The stage thread must never miss that hand-over and block for ever.
 */
public final class AdaptiveWaitStrategyStress {

    private AdaptiveWaitStrategyStress() {
    }

    @JCStressTest(Mode.Termination)
    @Outcome(id = "TERMINATED", expect = ACCEPTABLE, desc = "The stage thread saw the claim or was woken.")
    @Outcome(id = "STALE", expect = FORBIDDEN, desc = "The stage thread missed the hand-over and stays blocked.")
    @State
    public static class HandOverWhileBlocking {

        private final AdaptiveWaitStrategy strategy = new AdaptiveWaitStrategy(0);
        private final Sequence cursor = new Sequence(-1);
        private final SequenceBarrier barrier = new NeverAlerted(cursor);

        @Actor
        public void stageThread() {
            try {
                strategy.blockUntilClaimed(0, cursor, barrier);
            } catch (AlertException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Signal
        public void dispatcher() {
            cursor.set(0); // claims sequence 0 (a multi-producer ring's cursor moves on claim)
            strategy.signalAllWhenBlocking(); // hands it over
        }
    }

    /** A barrier that is never alerted: only the hand-over can end the wait. */
    private static final class NeverAlerted implements SequenceBarrier {

        private final Sequence cursor;

        NeverAlerted(Sequence cursor) {
            this.cursor = cursor;
        }

        @Override
        public long waitFor(long sequence) {
            throw new UnsupportedOperationException();
        }

        @Override
        public long getCursor() {
            return cursor.get();
        }

        @Override
        public boolean isAlerted() {
            return false;
        }

        @Override
        public void alert() {
        }

        @Override
        public void clearAlert() {
        }

        @Override
        public void checkAlert() {
        }
    }
}
