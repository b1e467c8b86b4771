package io.github.ringbus;

/**
 * What {@link RingLifecycle} starts and stops: the pipeline's stage threads. Implemented by {@link Pipeline}; the
 * lifecycle calls it from the thread that starts or shuts down the bus.
 */
interface RingStages {

    /** Starts the stage threads. */
    void start();

    /**
     * Waits until every command handed to the ring has completed, at most the timeout, then stops the stage
     * threads and waits for them to end.
     *
     * @param timeoutNanos how long to wait for the ring to drain
     */
    void drainAndStop(long timeoutNanos) throws InterruptedException;

    /**
     * Completes every command left in the ring (with a shutdown failure), on the calling thread, and waits for the
     * callbacks handed off the stage threads to be called. Called once, when no dispatcher can hand a command over
     * any more.
     */
    void completeUnfinished();
}
