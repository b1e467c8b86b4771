package io.github.ringbus.aggregates;

import org.axonframework.eventsourcing.Snapshotter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;

/**
 * Takes snapshots on a thread of its own, never on a pipeline thread: Axon's snapshot triggers ask for a snapshot
 * while an aggregate is loaded or a command commits, i.e. on the preload, handle or complete stage, and a snapshotter
 * reads the aggregate's whole history from the store. Requests are queued to one daemon thread, in order; a snapshot
 * that fails is logged and skipped (a snapshot only speeds up loading). After {@link #close()} requests are dropped.
 */
public final class OffPipelineSnapshotter implements Snapshotter, AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(OffPipelineSnapshotter.class);

    private final Snapshotter delegate;
    private final ExecutorService thread;

    /**
     * @param delegate   the snapshotter that takes the snapshots, e.g. Axon's {@code AggregateSnapshotter}
     * @param threadName the name of the snapshot thread
     */
    public OffPipelineSnapshotter(Snapshotter delegate, String threadName) {
        this.delegate = delegate;
        this.thread = Executors.newSingleThreadExecutor(runnable -> {
            Thread snapshots = new Thread(runnable, threadName);
            snapshots.setDaemon(true);
            return snapshots;
        });
    }

    @Override
    public void scheduleSnapshot(Class<?> aggregateType, String aggregateIdentifier) {
        try {
            thread.execute(() -> snapshot(aggregateType, aggregateIdentifier));
        } catch (RejectedExecutionException closed) {
            logger.debug("Snapshot of [{}] [{}] dropped: the snapshotter is closed", aggregateType.getSimpleName(),
                         aggregateIdentifier);
        }
    }

    private void snapshot(Class<?> aggregateType, String aggregateIdentifier) {
        try {
            delegate.scheduleSnapshot(aggregateType, aggregateIdentifier);
        } catch (RuntimeException failure) {
            logger.warn("Snapshot of [{}] [{}] failed", aggregateType.getSimpleName(), aggregateIdentifier, failure);
        }
    }

    /** Takes the snapshots already requested (waiting at most 10 s), then stops the thread. */
    @Override
    public void close() {
        thread.shutdown();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
