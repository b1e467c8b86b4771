package io.github.ringbus;

import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The bus's threads that read aggregates from the event store ahead of the preload stage: when the preload stage
 * misses an aggregate in its cache, it starts reading the other missing aggregates of the commands already in the
 * ring behind that one on these threads, so that a working set larger than the cache (or the first minutes after a
 * restart) is read from the store by several connections at once rather than one read after another on the preload
 * thread. See {@link PreloadedAggregates#readAhead}.
 * <p>
 * The threads start with the first read and end after 30 s without one: an idle bus, or one whose aggregates are all
 * cached, runs none. A read runs user code (upcasters, the aggregate's event sourcing handlers) and may throw: the
 * command that needs the aggregate then fails with it, as it would had the preload stage read it. The executor
 * clears an interrupt flag the code leaves before its next read. Closed when the bus shuts down (after the preload
 * stage has stopped); a later start opens it again.
 * <p>
 * Tests: {@code behaviour.ReadAheadTest}.
 */
final class ColdReads implements AutoCloseable {

    /** A bus without reads ahead: the preload stage reads every missing aggregate itself. */
    static final ColdReads NONE = new ColdReads(0, "none");

    private final int threads;
    private final String threadNamePrefix;
    private final AtomicInteger threadNumber = new AtomicInteger();
    /** Created by the first read after construction or {@link #close()}; guarded by {@code this}. */
    private ThreadPoolExecutor executor;

    /**
     * @param threads          how many reads may run at once; 0: none ahead
     * @param threadNamePrefix the threads are named {@code <prefix>-read-<n>}
     */
    ColdReads(int threads, String threadNamePrefix) {
        this.threads = threads;
        this.threadNamePrefix = threadNamePrefix;
    }

    /** @return true when missing aggregates may be read ahead */
    boolean enabled() {
        return threads > 0;
    }

    /**
     * @return where reads ahead run; called once per look-ahead of the preload stage, not per command
     */
    synchronized Executor executor() {
        if (executor == null) {
            ThreadPoolExecutor started = new ThreadPoolExecutor(
                    threads, threads, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), runnable -> {
                Thread thread = new Thread(runnable, threadNamePrefix + "-read-" + threadNumber.incrementAndGet());
                thread.setDaemon(true);
                return thread;
            });
            started.allowCoreThreadTimeOut(true);
            executor = started;
        }
        return executor;
    }

    /** Ends the threads; reads still queued are dropped (their commands are done: the preload stage has stopped). */
    @Override
    public synchronized void close() {
        if (executor != null) {
            executor.shutdownNow();
            executor = null;
        }
    }
}
