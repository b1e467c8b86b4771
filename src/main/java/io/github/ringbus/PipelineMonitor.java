package io.github.ringbus;

/**
 * Observes the pipeline for metrics: every completed command, with the time it reached each stage, and every batch
 * the store stage appended.
 * <p>
 * Called on pipeline threads (the complete stage and the store stage; with several store threads, each one's, at
 * the same time), so implementations must be thread-safe and quick, must not block and must not throw. Stage times are only taken when {@link #timesStages()} is true: each costs one
 * {@link System#nanoTime()} per command per stage.
 */
public interface PipelineMonitor extends StoreBatchListener {

    /** A monitor that observes nothing and asks for no stage times. */
    PipelineMonitor NONE = new PipelineMonitor() {
    };

    /**
     * @return true to have each stage stamp the time a command passed it
     */
    default boolean timesStages() {
        return false;
    }

    /**
     * A command completed: its callback is about to be called.
     *
     * @param commandName the command's name
     * @param failure     the failure reported to the callback, or null for success
     * @param times       when the command passed each stage (zeros unless {@link #timesStages()}); valid only
     *                    during this call
     */
    default void commandCompleted(String commandName, Throwable failure, StageTimes times) {
    }

    @Override
    default void appended(int commands, int events) {
    }
}
