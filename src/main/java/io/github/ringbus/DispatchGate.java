package io.github.ringbus;

import java.util.concurrent.atomic.LongAdder;

/**
 * Lets dispatchers into the ring while the bus runs, and tells shutdown when no dispatcher is between its state check
 * and its publish, so that shutdown never stops the pipeline under a command that is about to be published.
 * <p>
 * Dekker's handshake: a dispatcher raises the count of dispatchers inside before it reads whether the gate is open;
 * {@link #close()} writes the gate closed before {@link #isEmpty()} reads the count. Volatile accesses and CAS are
 * sequentially consistent, so either the dispatcher sees the gate closed and backs out, or shutdown sees it inside
 * and waits for it. The count is a {@link LongAdder}: striped over padded cells, so dispatchers on different cores
 * do not contend on one cache line. {@code DispatchGateStress} (jcstress) checks the handshake.
 */
final class DispatchGate {

    private final LongAdder inside = new LongAdder();
    private volatile boolean open;

    /**
     * Enters the gate; a dispatcher that entered must {@link #exit()} after publishing (or giving up).
     *
     * @return true when the gate was open and the caller is inside; false when it is closed (nothing to exit)
     */
    boolean enter() {
        inside.increment();
        if (open) {
            return true;
        }
        inside.decrement();
        return false;
    }

    /** Leaves the gate after a successful {@link #enter()}. */
    void exit() {
        inside.decrement();
    }

    /** Opens the gate: dispatchers may enter from now on. */
    void open() {
        open = true;
    }

    /** Closes the gate: dispatchers that have not entered yet are refused. */
    void close() {
        open = false;
    }

    /**
     * @return true when no dispatcher is inside; after {@link #close()}, once true it stays true
     */
    boolean isEmpty() {
        return inside.sum() == 0;
    }
}
