package io.github.ringbus;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadFactory;

/**
 * Creates the pipeline's stage threads, named after their stages in the order the Disruptor starts them, and
 * remembers them so that shutdown can wait for them to end.
 * <p>
 * Tests: {@code StagePlanTest}, {@code behaviour.CallbackTest}, {@code behaviour.ShutdownTest}.
 */
final class PipelineThreads implements ThreadFactory {

    private final List<String> names;
    private final List<Thread> started = new ArrayList<>();

    PipelineThreads(List<String> names) {
        this.names = List.copyOf(names);
    }

    @Override
    public synchronized Thread newThread(Runnable stage) {
        int index = started.size();
        String name = index < names.size() ? names.get(index) : names.get(0) + "-extra-" + index;
        Thread thread = new PipelineThread(stage, name);
        started.add(thread);
        return thread;
    }

    synchronized List<Thread> threads() {
        return List.copyOf(started);
    }

    /**
     * @return true when the calling thread is one of this or any other ringbus pipeline's stage threads
     */
    static boolean isPipelineThread() {
        return Thread.currentThread() instanceof PipelineThread;
    }

    /** A thread that runs one of the pipeline's stages; see {@link #isPipelineThread()}. */
    static final class PipelineThread extends Thread {

        /** When it began to run ({@code System.nanoTime()}), 0 before; written by itself once, read by any thread. */
        private volatile long startedNanos;

        PipelineThread(Runnable stage, String name) {
            super(stage, name);
            setDaemon(true);
        }

        @Override
        public void run() {
            long now = System.nanoTime();
            startedNanos = now == 0 ? 1 : now;
            super.run();
        }

        /**
         * @param now {@code System.nanoTime()}
         * @return the wall time from when it began to run until {@code now}, or 0 before it began
         */
        long runningNanos(long now) {
            long started = startedNanos;
            return started == 0 ? 0 : Math.max(0, now - started);
        }
    }
}
