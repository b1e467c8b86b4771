package io.github.ringbus;

import org.axonframework.eventsourcing.AbstractSnapshotTrigger;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTrigger;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.Snapshotter;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Takes a ring bus's snapshots off the pipeline: one thread of its own on which every snapshot is taken, and the
 * decoration that sends the snapshot requests of Axon's snapshot triggers there.
 * <p>
 * Axon's triggers ({@code EventCountSnapshotTriggerDefinition}, {@code AggregateLoadTimeSnapshotTriggerDefinition},
 * any {@link AbstractSnapshotTrigger}) call the snapshotter they were built with on the thread where the aggregate is
 * loaded or its command commits, and Axon's snapshotters take the snapshot on that thread unless they were given an
 * executor of their own. {@link #offPipeline(SnapshotTriggerDefinition)} re-points each trigger it prepares at an
 * {@link OffPipelineSnapshotter} around that same snapshotter (public {@link AbstractSnapshotTrigger#setSnapshotter},
 * after reading the trigger's snapshotter, which Axon keeps in a private field). A trigger of another kind is used as
 * it is, with a warning: where its snapshots run is up to it.
 * <p>
 * Requests run one after another, in order. The thread is started by the first request. {@link #close()} takes the
 * snapshots already requested (waiting at most 10 s) and drops later requests.
 * <p>
 * Tests: {@code SnapshotTest}.
 */
final class OffPipelineSnapshots implements AutoCloseable {

    private static final Logger logger = LoggerFactory.getLogger(OffPipelineSnapshots.class);

    private final ExecutorService thread;
    /** One off-pipeline snapshotter per snapshotter of the application (a few at most). */
    private final Map<Snapshotter, OffPipelineSnapshotter> snapshotters = new ConcurrentHashMap<>();

    /**
     * @param threadName the name of the snapshot thread
     */
    OffPipelineSnapshots(String threadName) {
        this.thread = Executors.newSingleThreadExecutor(runnable -> {
            Thread snapshots = new Thread(runnable, threadName);
            snapshots.setDaemon(true);
            return snapshots;
        });
    }

    /**
     * @param snapshotter a snapshotter, e.g. Axon's {@code AggregateSnapshotter}
     * @return a snapshotter that has {@code snapshotter} take each snapshot on this thread
     */
    Snapshotter offPipeline(Snapshotter snapshotter) {
        if (snapshotter instanceof OffPipelineSnapshotter) {
            return snapshotter;
        }
        return snapshotters.computeIfAbsent(snapshotter, s -> new OffPipelineSnapshotter(s, thread));
    }

    /**
     * @param definition when to snapshot an aggregate, as the application configured it
     * @return the same definition, whose triggers' snapshots are taken on this thread
     */
    SnapshotTriggerDefinition offPipeline(SnapshotTriggerDefinition definition) {
        if (definition instanceof NoSnapshotTriggerDefinition || definition instanceof OffPipelineDefinition) {
            return definition;
        }
        return new OffPipelineDefinition(definition);
    }

    @Override
    public void close() {
        thread.shutdown();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private final class OffPipelineDefinition implements SnapshotTriggerDefinition {

        private final SnapshotTriggerDefinition delegate;
        private final AtomicBoolean warned = new AtomicBoolean();

        private OffPipelineDefinition(SnapshotTriggerDefinition delegate) {
            this.delegate = delegate;
        }

        @Override
        public SnapshotTrigger prepareTrigger(Class<?> aggregateType) {
            return offPipeline(delegate.prepareTrigger(aggregateType));
        }

        @Override
        public SnapshotTrigger reconfigure(Class<?> aggregateType, SnapshotTrigger trigger) {
            return offPipeline(delegate.reconfigure(aggregateType, trigger));
        }

        private SnapshotTrigger offPipeline(SnapshotTrigger trigger) {
            if (trigger instanceof AbstractSnapshotTrigger axonTrigger && AxonInternals.triggerSnapshotterAvailable()) {
                Snapshotter snapshotter = AxonInternals.snapshotterOf(axonTrigger);
                if (snapshotter != null) {
                    axonTrigger.setSnapshotter(OffPipelineSnapshots.this.offPipeline(snapshotter));
                }
                return trigger;
            }
            if (warned.compareAndSet(false, true)) {
                logger.warn("Snapshot trigger [{}] is not one of Axon's: ringbus cannot move its snapshots off the "
                                    + "pipeline; give its snapshotter an executor of its own",
                            trigger.getClass().getName());
            }
            return trigger;
        }
    }
}
