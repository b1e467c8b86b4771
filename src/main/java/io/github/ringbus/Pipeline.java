package io.github.ringbus;

import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.ExceptionHandler;
import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.WaitStrategy;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.ProducerType;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The ring and its stages, wired in one place:
 * <pre>
 *   preload -&gt; handle[0..n) -&gt; store(append + subscribers, one transaction) -&gt; complete   PublishMode.IN_TRANSACTION
 *   preload -&gt; handle[0..n) -&gt; (store || publish) -&gt; complete        PublishMode.PARALLEL
 *   preload -&gt; handle[0..n) -&gt; store -&gt; publish -&gt; complete            PublishMode.AFTER_STORE
 *   preload -&gt; handle[0..n) -&gt; store -&gt; complete                       an EventStore that is not a RingEventStore
 *   (preload -&gt; handle) -&gt; (store -&gt; [publish] -&gt; complete)          Topology.COMPACT: two threads
 * </pre>
 * Only the complete stage gates the dispatchers: a slot is reused once its command has completed.
 * <p>
 * Not thread-safe for its lifecycle: {@link #start()} and {@link #drainAndStop} are called once each, by the bus's
 * {@link RingLifecycle}. {@link #tryClaim} and {@link #handOver} may be called by any number of dispatchers.
 */
final class Pipeline implements RingLifecycle.Stages {

    private static final Logger logger = LoggerFactory.getLogger(Pipeline.class);

    private final Disruptor<CommandSlot> disruptor;
    private final RingBuffer<CommandSlot> ring;
    private final CompleteStage complete;
    private final boolean timed;
    private final PipelineThreads threads;
    private final boolean publishSeparately;
    private final boolean compact;

    /**
     * Wires the stages; starts no thread.
     *
     * @param settings            the bus's settings
     * @param routes              where commands go
     * @param handlerInterceptors the bus's handler interceptors, read for every command (more may be registered)
     */
    Pipeline(RingSettings settings, CommandRoutes routes,
             List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors) {
        RingEventStore splitStore = settings.splitStore();
        boolean inTransaction = settings.publishMode() == PublishMode.IN_TRANSACTION;
        this.publishSeparately = splitStore != null && !inTransaction;
        if (splitStore == null) {
            logger.info("Event store [{}] is not a RingEventStore: the store stage appends and notifies "
                                + "subscribers in one step, and no separate publish stage runs; events that command "
                                + "handlers publish on the event bus are stored by Axon's event bus while the command "
                                + "prepares its commit, not by the store stage",
                        settings.eventStore().getClass().getName());
        }

        this.timed = settings.pipelineMonitor().timesStages();
        this.complete = new CompleteStage(settings.pipelineMonitor());
        PreloadStage preload = new PreloadStage(routes, settings.handlerThreads(), timed);
        @SuppressWarnings("unchecked")
        EventHandler<CommandSlot>[] handle = new EventHandler[settings.handlerThreads()];
        for (int segment = 0; segment < handle.length; segment++) {
            handle[segment] = new HandleStage(segment, handlerInterceptors,
                                              settings.rollbackConfiguration(), splitStore,
                                              settings.spanFactory(), timed, settings.transactionManager());
        }
        StoreStage store = new StoreStage(settings.eventStore(), splitStore, settings.transactionManager(),
                                          settings.maxStoreBatchEvents(), settings.pipelineMonitor(), inTransaction);
        boolean afterStore = settings.publishMode() == PublishMode.AFTER_STORE;

        this.compact = settings.topology() == Topology.COMPACT;
        this.threads = new PipelineThreads(threadNames(settings.threadNamePrefix(), handle.length));
        this.disruptor = new Disruptor<>(() -> new CommandSlot(settings.eventStore()), settings.ringSize(), threads,
                                         ProducerType.MULTI, settings.newWaitStrategy());
        disruptor.setDefaultExceptionHandler(new SlotFailureHandler());

        // The topology, in one statement each:
        if (compact) {
            // (preload -> handle) -> (store -> [publish] -> complete): two threads; publish only after the store.
            disruptor.handleEventsWith(new PreloadThenHandle(preload, (HandleStage) handle[0]))
                     .then(new StoreThenComplete(store, publishSeparately ? new PublishStage(splitStore, true) : null,
                                                 complete, settings.ringSize()));
        } else if (!publishSeparately) {
            // IN_TRANSACTION (store appends and calls the subscribers in one transaction), or not a RingEventStore.
            disruptor.handleEventsWith(preload).then(handle).then(store).then(complete);
        } else if (afterStore) {
            disruptor.handleEventsWith(preload).then(handle).then(store).then(new PublishStage(splitStore, true))
                     .then(complete);
        } else {
            disruptor.handleEventsWith(preload).then(handle).then(store, new PublishStage(splitStore, false))
                     .then(complete);
        }
        this.ring = disruptor.getRingBuffer();
    }

    private List<String> threadNames(String prefix, int handlerThreads) {
        List<String> names = new ArrayList<>();
        if (compact) {
            names.add(prefix + "-preload-handle");
            names.add(prefix + "-store-complete");
            return names;
        }
        names.add(prefix + "-preload");
        for (int i = 0; i < handlerThreads; i++) {
            names.add(prefix + "-handle-" + i);
        }
        names.add(prefix + "-store");
        if (publishSeparately) {
            names.add(prefix + "-publish");
        }
        names.add(prefix + "-complete");
        return names;
    }

    /** Starts the stage threads. */
    @Override
    public void start() {
        disruptor.start();
    }

    /**
     * @return true when the calling thread is one of this or any other ringbus pipeline's stage threads
     */
    static boolean isPipelineThread() {
        return Thread.currentThread() instanceof PipelineThreads.PipelineThread;
    }

    /**
     * @return the ring sequence up to which every command has completed (-1 before the first)
     */
    long completedSequence() {
        return complete.completedSequence();
    }

    /**
     * Claims the next slot if one is free.
     *
     * @return the slot's sequence, or -1 when the ring is full
     */
    long tryClaim() {
        try {
            return ring.tryNext();
        } catch (InsufficientCapacityException full) {
            return -1;
        }
    }

    /**
     * Hands a command to the ring: fills the claimed slot and makes it visible to the preload stage (the
     * Disruptor's "publish" of a sequence; "publish" in ringbus means handing events to subscribers).
     *
     * @param sequence        the sequence returned by {@link #tryClaim}
     * @param command         the command
     * @param callback        the caller's callback
     * @param monitorCallback the message monitor's callback for the command
     */
    void handOver(long sequence, CommandMessage<?> command, CommandCallback<Object, Object> callback,
                  MessageMonitor.MonitorCallback monitorCallback) {
        // The Disruptor's translate-and-publish: a claimed sequence is published whatever happens, or every stage
        // would stop at it. Filling runs no user code.
        try {
            CommandSlot slot = ring.get(sequence);
            slot.command = command;
            slot.callback = callback;
            slot.monitorCallback = monitorCallback;
            if (timed) {
                slot.dispatchedNanos = System.nanoTime();
            }
        } finally {
            ring.publish(sequence);
        }
    }

    /** @return the number of free slots */
    long remainingCapacity() {
        return ring.remainingCapacity();
    }

    /** @return the number of slots */
    int ringSize() {
        return ring.getBufferSize();
    }

    /**
     * Waits until every command handed over has completed, at most the timeout, then stops the stage threads and
     * waits for them to end (10 s each at most).
     */
    @Override
    public void drainAndStop(long timeoutNanos) throws InterruptedException {
        // Not Disruptor.shutdown(): its backlog check ignores stage threads that have not begun to run yet, so right
        // after start it would halt the ring with commands in it. The complete stage's sequence is the whole truth.
        Backoff.FOR_SHUTDOWN.awaitUntil(() -> completedSequence() >= ring.getCursor(),
                                        System.nanoTime() + timeoutNanos);
        disruptor.halt();
        for (Thread thread : threads.threads()) {
            thread.join(TimeUnit.SECONDS.toMillis(10));
        }
    }

    /**
     * After {@link #drainAndStop}, and once no dispatcher can hand a command over any more: completes every command
     * left in the ring with a {@link ShutdownInProgressException}, on the calling thread, so that every callback
     * fires exactly once.
     */
    @Override
    public void completeUnfinished() {
        long handedOver = ring.getCursor();
        for (long sequence = completedSequence() + 1; sequence <= handedOver; sequence++) {
            CommandSlot slot = ring.get(sequence);
            if (slot.callback != null) {
                slot.preloadFailure = new ShutdownInProgressException(
                        "ringbus shut down before command [" + slot.commandName() + "] completed");
                CompleteStage.complete(slot, PipelineMonitor.NONE);
            }
        }
    }

    /**
     * Last line of defence: the stages catch their own failures, so anything reaching here is a bug in ringbus. The
     * slot's command is failed with it rather than lost.
     */
    private static final class SlotFailureHandler implements ExceptionHandler<CommandSlot> {

        @Override
        public void handleEventException(Throwable ex, long sequence, CommandSlot slot) {
            logger.error("ringbus stage failed on command in slot {}", sequence, ex);
            if (slot != null && slot.preloadFailure == null) {
                slot.preloadFailure = ex;
            }
        }

        @Override
        public void handleOnStartException(Throwable ex) {
            logger.error("ringbus stage failed to start", ex);
        }

        @Override
        public void handleOnShutdownException(Throwable ex) {
            logger.error("ringbus stage failed to shut down", ex);
        }
    }
}
