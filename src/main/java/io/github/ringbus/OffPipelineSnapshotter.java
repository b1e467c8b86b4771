package io.github.ringbus;

import org.axonframework.eventsourcing.Snapshotter;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Objects;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * A {@link Snapshotter} that hands every request to an {@link OffPipelineSnapshots}, so that the snapshot (which reads the
 * aggregate's whole history from the store) is never taken on a pipeline thread. Axon's snapshot triggers ask for a
 * snapshot while an aggregate is loaded (preload stage) or while a command prepares its commit (handle stage).
 * <p>
 * Asked inside a Unit of Work that has not committed yet, it queues the request after that Unit of Work's commit,
 * i.e. once the command's events are stored, as Axon's own snapshotters do; otherwise at once. A snapshot that fails
 * is logged and skipped: a snapshot only speeds up loading.
 * <p>
 * Tests: {@code SnapshotTest}.
 */
final class OffPipelineSnapshotter implements Snapshotter {

    private static final Logger logger = LoggerFactory.getLogger(OffPipelineSnapshotter.class);

    private final Snapshotter delegate;
    private final Executor thread;

    /**
     * @param delegate the snapshotter that takes the snapshots, e.g. Axon's {@code AggregateSnapshotter}
     * @param thread   runs the delegate, one request after another
     */
    OffPipelineSnapshotter(Snapshotter delegate, Executor thread) {
        this.delegate = Objects.requireNonNull(delegate, "delegate");
        this.thread = Objects.requireNonNull(thread, "thread");
    }

    @Override
    public void scheduleSnapshot(Class<?> aggregateType, String aggregateIdentifier) {
        if (CurrentUnitOfWork.isStarted() && CurrentUnitOfWork.get().phase().isBefore(UnitOfWork.Phase.COMMIT)) {
            CurrentUnitOfWork.get().afterCommit(unitOfWork -> queue(aggregateType, aggregateIdentifier));
        } else {
            queue(aggregateType, aggregateIdentifier);
        }
    }

    private void queue(Class<?> aggregateType, String aggregateIdentifier) {
        try {
            thread.execute(() -> snapshot(aggregateType, aggregateIdentifier));
        } catch (RejectedExecutionException closed) {
            logger.debug("Snapshot of [{}] [{}] dropped: the snapshot thread is closed",
                         aggregateType.getSimpleName(), aggregateIdentifier);
        }
    }

    private void snapshot(Class<?> aggregateType, String aggregateIdentifier) {
        try {
            delegate.scheduleSnapshot(aggregateType, aggregateIdentifier);
        } catch (RuntimeException failure) {
            logger.warn("Snapshot of [{}] [{}] failed", aggregateType.getSimpleName(), aggregateIdentifier, failure);
        }
    }
}
