package io.github.ringbus;

import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * How a ringbus thread waits for something another thread will do: a dispatcher for a free slot, shutdown for the
 * ring to drain or for dispatchers to leave. The one waiting policy of the code base (as Agrona's
 * {@code IdleStrategy}): park for a pause that doubles with every attempt, from a minimum to a maximum.
 * <p>
 * Never spins: on a machine of two cores the thread being waited for needs the core. Immutable and shared; the caller
 * counts its attempts, so waiting allocates nothing.
 */
final class Backoff {

    /**
     * A dispatcher waiting for a slot: answers quickly while the ring frees slots at its usual pace (a wait begins
     * with the shortest park the OS gives, about 50 µs on Linux), and parks up to a millisecond once the ring has
     * freed nothing for about as long (a handler that blocks, a slow store): with a 50 µs limit a waiting dispatcher
     * woke 20,000 times a second and used 14% of a core, with 1 ms about 1%.
     */
    static final Backoff FOR_SLOT = new Backoff(1_000, 1_000_000);
    /** Shutdown waiting for the ring to drain and dispatchers to leave: nobody is in a hurry. */
    static final Backoff FOR_SHUTDOWN = new Backoff(10_000, 100_000);

    private final long minPauseNanos;
    private final long maxPauseNanos;

    Backoff(long minPauseNanos, long maxPauseNanos) {
        if (minPauseNanos < 1 || maxPauseNanos < minPauseNanos) {
            throw new IllegalArgumentException("Backoff needs 1 <= minPause <= maxPause, but got " + minPauseNanos
                                                       + " and " + maxPauseNanos);
        }
        this.minPauseNanos = minPauseNanos;
        this.maxPauseNanos = maxPauseNanos;
    }

    /**
     * @param attempt how many times the caller has waited already (0 for the first time)
     * @return how long the caller parks after that many attempts: the minimum doubled per attempt, at most the maximum
     */
    long pauseNanos(int attempt) {
        int doublings = Math.min(Math.max(attempt, 0), 62);
        long pause = minPauseNanos << doublings;
        return pause <= 0 || pause > maxPauseNanos || (pause >> doublings) != minPauseNanos ? maxPauseNanos : pause;
    }

    /**
     * Parks the calling thread for the pause of its attempt.
     *
     * @param attempt how many times the caller has waited already (0 for the first time)
     */
    void idle(int attempt) {
        LockSupport.parkNanos(pauseNanos(attempt));
    }

    /**
     * Waits until the condition holds or the deadline passes.
     *
     * @param condition     what is waited for
     * @param deadlineNanos a {@link System#nanoTime()} value; {@link Long#MAX_VALUE}-like values wait for ever
     * @return whether the condition held
     */
    boolean awaitUntil(BooleanSupplier condition, long deadlineNanos) {
        int attempt = 0;
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadlineNanos >= 0) {
                return condition.getAsBoolean();
            }
            idle(attempt++);
        }
        return true;
    }

    /**
     * Waits until the condition holds, however long it takes.
     *
     * @param condition what is waited for
     */
    void await(BooleanSupplier condition) {
        int attempt = 0;
        while (!condition.getAsBoolean()) {
            idle(attempt++);
        }
    }
}
