package io.github.ringbus;

/**
 * When one command passed each stage, in {@link System#nanoTime()} units; see {@link PipelineMonitor}. The store and
 * publish stages run side by side, so their time is the span from {@link #handledNanos()} to
 * {@link #completingNanos()}.
 */
public interface StageTimes {

    /** @return when the command was published to the ring */
    long dispatchedNanos();

    /** @return when the preload stage finished with it */
    long preloadedNanos();

    /** @return when its handler returned (0 if it was not handled) */
    long handledNanos();

    /** @return when the complete stage took it, after store and publish */
    long completingNanos();
}
