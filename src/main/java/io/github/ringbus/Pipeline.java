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
import com.lmax.disruptor.YieldingWaitStrategy;
import com.lmax.disruptor.SleepingWaitStrategy;
import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.ProducerType;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The ring and its stages, wired in one place:
 * <pre>
 *   preload -&gt; handle[0..n) -&gt; store(append + subscribers, one transaction) -&gt; complete   PublishMode.IN_TRANSACTION
 *   preload -&gt; handle[0..n) -&gt; (store || publish) -&gt; complete        PublishMode.PARALLEL
 *   preload -&gt; handle[0..n) -&gt; store -&gt; publish -&gt; complete            PublishMode.AFTER_STORE
 *   preload -&gt; handle[0..n) -&gt; store -&gt; complete                       an EventStore that is not a RingEventStore
 *   (preload -&gt; handle) -&gt; (store -&gt; [publish] -&gt; complete)          Topology.COMPACT: two threads
 *   preload -&gt; handle[0..n) -&gt; shard[0..k)(store -&gt; [publish] -&gt; complete)   storeThreads k &gt; 1 (FULL)
 * </pre>
 * Only the complete stages gate the dispatchers: a slot is reused once its command has completed. With several store
 * threads each shard stores, publishes and completes its own share of the aggregates ({@link StoreShard}).
 * <p>
 * Not thread-safe for its lifecycle: {@link #start()} and {@link #drainAndStop} are called once each, by the bus's
 * {@link RingLifecycle}. {@link #tryClaim} and {@link #handOver} may be called by any number of dispatchers.
 * <p>
 * Tests: {@code StagePlanTest}, {@code behaviour.ShutdownTest}, {@code SettingsMatrixTest},
 * {@code PipelineStressTest}.
 */
final class Pipeline implements RingStages {

    private static final Logger logger = LoggerFactory.getLogger(Pipeline.class);

    private final Disruptor<CommandSlot> disruptor;
    private final RingBuffer<CommandSlot> ring;
    /** The complete stage of each store shard (one, unless several store threads run). */
    private final List<CompleteStage> completeStages;
    /** Every store stage, one per store thread, for the time their threads spent in the store. */
    private final List<StoreStage> storeStages;
    /** The stage threads' names, in the order they start. */
    private final List<String> threadNames;
    private final boolean timed;
    private final PipelineThreads threads;
    private final boolean publishSeparately;
    private final boolean compact;
    /**
     * The store stage of the FULL topology with one store thread, whose sequence says how far the ring's commands went
     * through the store; null where store threads complete their own commands.
     */
    private final EventHandler<CommandSlot> storeStage;
    /** The threads that append events or hand them to subscribers: while one runs, a command may still be stored. */
    private final List<String> storingThreadNames;
    /** What becomes of refused appends, and which commands are handled again (one per bus, from the facts). */
    private final StoreRecovery recovery;
    /** The store while it cannot be reached, shared by the store stages; it tells the bus's reads too. */
    private final StoreOutage outage;
    /** Hands the commands the policy lets run again back to their handler thread (see ReRuns). */
    private final ReRuns reRuns;
    /** How long shutdown waits for the halted stage threads to end: the shutdown timeout, at most 10 s. */
    private final long stageEndGraceNanos;
    /** What follows from the ring's shape (where subscribers run, whether re-runs and nesting in place are allowed). */
    private final StagePlan.Facts facts;
    /** The graph of stage threads and what follows from it, in words (see {@link #shape()}). */
    private final String shape;
    /** Calls the callbacks that may wait, off the stage threads (see CallbackThread). */
    private final CallbackThread callbacks;

    /**
     * Wires the stages; starts no thread.
     *
     * @param settings            the bus's settings
     * @param routes              where commands go
     * @param handlerInterceptors the bus's handler interceptors, read for every command (more may be registered)
     * @param reads               the bus's reads, which the store stages tell whether the store can be reached
     */
    Pipeline(RingSettings settings, CommandRoutes routes,
             List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors, FailFastReads reads) {
        this.outage = new StoreOutage(settings.transactionManager(), reads,
                                      settings.threadNamePrefix() + "-store-probe");
        RingEventStore splitStore = settings.splitStore();
        this.facts = StagePlan.Facts.of(settings.topology(), settings.storeThreads(), settings.publishMode(),
                                        splitStore != null);
        boolean inTransaction = facts.subscribers() == StagePlan.Facts.Subscribers.IN_THE_STORES_TRANSACTION;
        boolean afterStore = settings.publishMode() == PublishMode.AFTER_STORE;
        this.publishSeparately = facts.publishesSeparately();
        // Where the store is one of Axon's event buses but not a RingEventStore, each slot's Unit of Work holds the
        // queue Axon's bus puts published events in, so that they stay among the command's events (SlotUnitOfWork).
        String eventQueueKey = splitStore == null ? AxonInternals.eventQueueKeyOf(settings.eventStore()) : null;
        if (splitStore == null && eventQueueKey != null) {
            logger.info("Event store [{}] is not a RingEventStore: the store stage appends and notifies "
                                + "subscribers in one step, and no separate publish stage runs",
                        settings.eventStore().getClass().getName());
        } else if (splitStore == null) {
            logger.warn("Event store [{}] is not a RingEventStore nor one of Axon's event buses: the store stage "
                                + "appends and notifies subscribers in one step, and events that command handlers "
                                + "publish on it are stored while the command prepares its commit, ahead of the "
                                + "events its aggregate applied, not with the command's batch; use a RingEventStore",
                        settings.eventStore().getClass().getName());
        }

        this.timed = settings.pipelineMonitor().timesStages();
        this.compact = facts.handlerThreadPreloads();
        int storeShards = settings.storeThreads();
        LeftInterrupts leftInterrupts = new LeftInterrupts();
        // Every stage runs inside a StageGuard: the Disruptor's processor then never sees a stage fail, and an
        // interrupt flag left by user code is cleared before the thread waits again (see StageGuard).
        // Commands handled on top of events the store refuses are run again where the policy lets them; never when a
        // publish stage runs beside the store (StagePlan.Facts).
        this.recovery = new IsolatingStoreRecovery(facts.reRunsAllowed());
        this.reRuns = new ReRuns(settings.handlerThreads());
        EventHandler<CommandSlot> preload = new StageGuard(
                "preload", new PreloadStage(routes, settings.handlerThreads(), timed, reRuns::slot,
                                            settings.readAheadThreads() > 0, !compact), leftInterrupts);
        List<StagePlan.Stage> handlers = new ArrayList<>();
        for (int segment = 0; segment < settings.handlerThreads(); segment++) {
            handlers.add(StagePlan.handling("handle-" + segment, new StageGuard(
                    "handle-" + segment, new HandleStage(segment, storeShards, handlerInterceptors,
                                                         settings.rollbackConfiguration(), splitStore,
                                                         settings.spanFactory(), timed,
                                                         settings.transactionManager(), recovery, reRuns,
                                                         this::completedSequence),
                    leftInterrupts), reRuns, segment));
        }
        // A store thread that completes its own commands (COMPACT's second thread, or one of several store shards)
        // publishes after its store: only what was stored, whatever the mode.
        boolean storeCompletes = facts.storeCompletes();
        this.callbacks = new CallbackThread(settings.threadNamePrefix() + "-callbacks");
        List<StagePlan.Stage> shards = new ArrayList<>();
        List<CompleteStage> completeStages = new ArrayList<>();
        List<StoreStage> storeStages = new ArrayList<>();
        String[] storeThreadNames = new String[storeShards];
        for (int shard = 0; shard < storeShards; shard++) {
            storeThreadNames[shard] = settings.threadNamePrefix() + "-store-complete-" + shard;
        }
        GapBound gapBound = GapBound.forStore(settings.eventStore(), storeThreadNames);
        CommitDeadline deadline = CommitDeadline.forStore(settings.eventStore());
        for (int shard = 0; storeCompletes && shard < storeShards; shard++) {
            String suffix = storeShards == 1 ? "" : "-" + shard;
            StoreStage storeStage = newStoreStage(settings, splitStore, inTransaction, leftInterrupts, gapBound,
                                                  deadline, shard);
            storeStages.add(storeStage);
            CompleteStage completeStage = new CompleteStage(settings.pipelineMonitor(), callbacks);
            completeStages.add(completeStage);
            shards.add(StagePlan.storing("store-complete" + suffix, new StoreShard(
                    shard, storeShards, storeStage, new StageGuard("store" + suffix, storeStage, leftInterrupts),
                    publishSeparately ? new StageGuard("publish" + suffix, new PublishStage(splitStore, true),
                                                       leftInterrupts) : null,
                    new StageGuard("complete" + suffix, completeStage, leftInterrupts), settings.ringSize())));
        }
        EventHandler<CommandSlot> store = null;
        StagePlan plan;
        // The topology, in one statement each:
        if (compact) {
            // (preload -> handle) -> (store -> [publish] -> complete): two threads; publish only after the store.
            plan = StagePlan.first(StagePlan.handling("preload-handle",
                                                      new PreloadThenHandle(preload, handlers.get(0).handler()),
                                                      reRuns, 0))
                            .then(shards);
        } else if (storeCompletes) {
            // preload -> handle[0..n) -> shard[0..k) (store -> [publish] -> complete), one shard per share of the
            // aggregates, each committing and completing on its own.
            plan = StagePlan.first(StagePlan.stage("preload", preload)).then(handlers).then(shards);
        } else {
            StoreStage storeStage = newStoreStage(settings, splitStore, inTransaction, leftInterrupts, null,
                                                  deadline, 0);
            storeStages.add(storeStage);
            store = new StageGuard("store", storeStage, leftInterrupts);
            CompleteStage completeStage = new CompleteStage(settings.pipelineMonitor(), callbacks);
            completeStages.add(completeStage);
            StagePlan.Stage storing = StagePlan.storing("store", store);
            StagePlan.Stage completing = StagePlan.stage("complete",
                                                         new StageGuard("complete", completeStage, leftInterrupts));
            StagePlan handled = StagePlan.first(StagePlan.stage("preload", preload)).then(handlers);
            if (!publishSeparately) {
                // IN_TRANSACTION (store appends and calls the subscribers in one transaction), or not a RingEventStore.
                plan = handled.then(storing).then(completing);
            } else {
                StagePlan.Stage publish = StagePlan.storing(
                        "publish", new StageGuard("publish", new PublishStage(splitStore, afterStore), leftInterrupts));
                plan = afterStore ? handled.then(storing).then(publish).then(completing)
                                  : handled.then(storing, publish).then(completing);
            }
        }
        this.completeStages = List.copyOf(completeStages);
        this.storeStages = List.copyOf(storeStages);
        this.threadNames = plan.threadNames(settings.threadNamePrefix());
        this.storeStage = store;
        this.threads = new PipelineThreads(threadNames);
        this.storingThreadNames = plan.storingThreadNames(settings.threadNamePrefix());
        this.stageEndGraceNanos = Math.min(TimeUnit.SECONDS.toNanos(10), settings.shutdownTimeout().toNanos());
        this.disruptor = new Disruptor<>(() -> new CommandSlot(settings.eventStore(), eventQueueKey),
                                         settings.ringSize(), threads,
                                         ProducerType.MULTI, waitStrategy(settings.waitStrategy()));
        SlotFailureHandler failures = new SlotFailureHandler();
        disruptor.setDefaultExceptionHandler(failures);
        reRuns.ring(disruptor.getRingBuffer());
        plan.wireInto(disruptor, failures);
        this.shape = plan + "; " + facts;
        logger.debug("ringbus stages: {}", shape);
        this.ring = disruptor.getRingBuffer();
    }

    /** A new instance of the chosen wait strategy (the Disruptor's strategies keep state per ring). */
    private static WaitStrategy waitStrategy(WaitStrategyChoice choice) {
        return switch (choice) {
            case BLOCKING -> AdaptiveWaitStrategy.blocking();
            case YIELDING -> new YieldingWaitStrategy();
            case BUSY_SPIN -> new BusySpinWaitStrategy();
            case SLEEPING -> new SleepingWaitStrategy();
            case ADAPTIVE -> new AdaptiveWaitStrategy();
        };
    }

    private StoreStage newStoreStage(RingSettings settings, RingEventStore splitStore, boolean inTransaction,
                                            LeftInterrupts leftInterrupts, GapBound gapBound,
                                            CommitDeadline deadline, int shard) {
        return new StoreStage(settings.eventStore(), splitStore, settings.transactionManager(),
                              settings.maxStoreBatchEvents(), settings.pipelineMonitor(), inTransaction,
                              leftInterrupts, recovery, reRuns, gapBound, shard, outage, deadline);
    }

    /**
     * What each stage thread has spent so far, in the order the threads start: its CPU time (-1 before it started,
     * after it ended, or where the JVM cannot measure it) and, for a thread that stores, its time in the store.
     * Any thread; allocates (not for the hot path).
     */
    List<StageThreadTimes> stageThreadTimes() {
        ThreadMXBean mx = ManagementFactory.getThreadMXBean();
        boolean measurable = mx.isThreadCpuTimeSupported() && mx.isThreadCpuTimeEnabled();
        List<Thread> started = threads.threads();
        List<StageThreadTimes> times = new ArrayList<>(threadNames.size());
        for (String name : threadNames) {
            Thread thread = started.stream().filter(t -> t.getName().equals(name)).findFirst().orElse(null);
            long cpu = thread == null || !measurable ? -1 : mx.getThreadCpuTime(thread.getId());
            long now = System.nanoTime(); // after the CPU time: the interval it covers is never shorter than its growth
            long inStore = 0;
            for (StoreStage stage : storeStages) {
                if (thread != null && stage.health().runner() == thread) {
                    inStore += stage.health().inStoreNanos(now);
                }
            }
            long running = thread instanceof PipelineThreads.PipelineThread stage ? stage.runningNanos(now) : 0;
            times.add(new StageThreadTimes(name, storingThreadNames.contains(name), cpu, inStore, running));
        }
        return times;
    }

    /** @return how many commands the store stages failed in the last minute; any thread, for health checks */
    long storeFailedCommandsInLastMinute() {
        long now = System.nanoTime();
        long failed = 0;
        for (StoreStage stage : storeStages) {
            failed += stage.health().failedInLastMinute(now);
        }
        return failed;
    }

    /**
     * @return the store failing longest: the store thread whose attempts have all failed for the longest time, or null
     *         when every store thread's last attempt stored (or none failed); while the store cannot be reached
     *         ({@link StoreOutage}), failing now whether or not a command tried it since. Any thread.
     */
    StoreFailure storeFailure() {
        long now = System.nanoTime();
        StoreFailure longest = null;
        for (StoreStage stage : storeStages) {
            StoreFailure failure = stage.health().failure(now);
            if (failure != null && (longest == null || failure.failingFor().compareTo(longest.failingFor()) > 0)) {
                longest = failure;
            }
        }
        StoreFailure away = outage.failure(now);
        if (away == null) {
            return longest;
        }
        // While the outage holds the store is failing now, though no command came to try it: the probe says so.
        return longest == null || away.failingFor().compareTo(longest.failingFor()) >= 0 ? away
                : new StoreFailure(longest.failingFor(), away.sinceLastFailure(), away.lastFailure());
    }

    /** Starts the stage threads. */
    @Override
    public void start() {
        callbacks.start();
        disruptor.start();
    }

    /**
     * @return the ring sequence up to which every command has completed (-1 before the first)
     */
    long completedSequence() {
        // With several store shards a slot is done once every shard passed it: the lowest of their sequences.
        long completed = Long.MAX_VALUE;
        for (int i = 0; i < completeStages.size(); i++) {
            completed = Math.min(completed, completeStages.get(i).completedSequence());
        }
        return completed;
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
     * Claims {@code count} consecutive slots at once, without waiting (the Disruptor's {@code tryNext(n)}: one claim
     * on the ring's cursor for all of them).
     *
     * @param count how many, from 1 to the ring's size
     * @return the highest sequence claimed, or -1 when fewer slots are free
     */
    long tryClaim(int count) {
        try {
            return ring.tryNext(count);
        } catch (InsufficientCapacityException full) {
            return -1;
        }
    }

    /**
     * Hands {@code count} commands to the ring in the slots claimed by one {@link #tryClaim(int)}, in their order, and
     * makes them visible to the preload stage at once (one publish of the whole range).
     *
     * @param highest          the sequence {@link #tryClaim(int)} returned
     * @param count            the number of slots it claimed
     * @param commands         the commands; those from {@code from} on fill the slots
     * @param from             the index of the first command
     * @param callback         the caller's callback, for every command
     * @param monitorCallbacks the message monitor's callback of each command, at the same index as the command
     */
    void handOverAll(long highest, int count, CommandMessage<?>[] commands, int from,
                     CommandCallback<Object, Object> callback, MessageMonitor.MonitorCallback[] monitorCallbacks) {
        long lowest = highest - count + 1;
        // As handOver: every claimed sequence is published whatever happens. Filling runs no user code.
        try {
            for (int i = 0; i < count; i++) {
                long sequence = lowest + i;
                CommandSlot slot = ring.get(sequence);
                slot.fill(sequence, commands[from + i], callback, monitorCallbacks[from + i]);
                if (timed) {
                    slot.dispatchedNanos = System.nanoTime();
                }
            }
        } finally {
            ring.publish(lowest, highest);
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
            slot.fill(sequence, command, callback, monitorCallback);
            if (timed) {
                slot.dispatchedNanos = System.nanoTime();
            }
        } finally {
            ring.publish(sequence);
        }
    }

    /**
     * Whether a command published after the given sequence matches: for a command that a handler sends and waits
     * for, which runs in place only if no command of its aggregate dispatched before it is still ahead of it in the
     * ring. A slot claimed but not yet published holds a command dispatched at the same time, in no order with it.
     * Handler thread only, while it handles the command at {@code sequence}: no slot after it can be reused.
     *
     * @param sequence the sequence of the command being handled
     * @param matches  tests a command waiting in the ring
     */
    boolean anyPublishedAfter(long sequence, Predicate<CommandMessage<?>> matches) {
        return anyPublishedAfter(ring, sequence, matches);
    }

    /**
     * {@link #anyPublishedAfter(long, Predicate)} on the given ring; package-private for its jcstress test. A slot's
     * command is read only once the ring says its sequence is published (an acquire of the Disruptor's availability
     * flag, which the dispatcher set, with release, after filling the slot), so a command read is the one dispatched.
     */
    static boolean anyPublishedAfter(RingBuffer<CommandSlot> ring, long sequence,
                                     Predicate<CommandMessage<?>> matches) {
        long claimed = ring.getCursor();
        for (long next = sequence + 1; next <= claimed; next++) {
            if (ring.isAvailable(next) && matches.test(ring.get(next).command)) {
                return true;
            }
        }
        return false;
    }

    /** @return the number of free slots */
    /**
     * @return the stage threads' graph as the Disruptor DSL reads ({@code preload -> handle-0 -> (store || publish) ->
     * complete}), where the subscribers are called, and whether commands built on a refused append may run again
     */
    String shape() {
        return shape;
    }

    /** @return the thread that calls the callbacks that may wait, off the stage threads */
    CallbackThread callbacks() {
        return callbacks;
    }

    /** @return what follows from the ring's shape */
    StagePlan.Facts facts() {
        return facts;
    }

    long remainingCapacity() {
        return ring.remainingCapacity();
    }

    /** @return the number of slots */
    int ringSize() {
        return ring.getBufferSize();
    }

    /**
     * Waits until every command put in the ring so far has completed (its events stored), at most the timeout. Not on
     * a pipeline thread, which may be one of those the commands wait for.
     *
     * @return true when they all completed in time
     * @throws InterruptedException when the waiting thread is interrupted
     */
    boolean awaitCommandsSoFar(long timeoutNanos) throws InterruptedException {
        long published = ring.getCursor();
        return Backoff.FOR_SHUTDOWN.awaitUntil(() -> completedSequence() >= published,
                                               System.nanoTime() + timeoutNanos);
    }

    /**
     * Waits until every command handed over has completed, at most the timeout, then stops the stage threads and
     * waits for them to end: the shutdown timeout, at most 10 s, for all of them together.
     */
    @Override
    public void drainAndStop(long timeoutNanos) throws InterruptedException {
        // Not Disruptor.shutdown(): its backlog check ignores stage threads that have not begun to run yet, so right
        // after start it would halt the ring with commands in it. The complete stage's sequence is the whole truth.
        Backoff.FOR_SHUTDOWN.awaitUntil(() -> completedSequence() >= ring.getCursor(),
                                        System.nanoTime() + timeoutNanos);
        reRuns.stop(); // before the halt: see ReRunBarrier
        outage.close();
        disruptor.halt();
        long deadline = System.nanoTime() + stageEndGraceNanos;
        for (Thread thread : threads.threads()) {
            long left = deadline - System.nanoTime();
            if (left > 0) {
                TimeUnit.NANOSECONDS.timedJoin(thread, left);
            }
        }
    }

    /**
     * After {@link #drainAndStop}, and once no dispatcher can hand a command over any more: finishes every command
     * left in the ring, on the calling thread, so that every callback fires exactly once and tells the truth.
     * <ul>
     *   <li>A command the store stage is done with (stored, or failed there) is completed as the complete stage
     *       would: its callback gets its real outcome.</li>
     *   <li>When every stage thread has ended, a command that did not reach the store is failed with a
     *       {@link ShutdownInProgressException}: nothing will store it.</li>
     *   <li>A stage thread that has not ended is held up by user code (a handler, a subscriber, a callback) or by the
     *       event store, and finishes the batch it began once that returns: it may still handle, store or complete
     *       commands of it. Those commands are failed without touching their slots ({@link CompleteStage#abandon});
     *       with a {@link CommitOutcomeUnknownException} while the store or publish thread is among them (it may
     *       still store them), else with a {@link ShutdownInProgressException}.</li>
     * </ul>
     * The claim on each slot ({@link CommandSlot#claimCompletion()}) makes sure that a callback is called once, by
     * whichever thread gets there first. Then the callback thread makes the calls handed to it and ends (waited for
     * at most the stage threads' grace).
     */
    @Override
    public void completeUnfinished() {
        List<Thread> busy = threads.threads().stream().filter(Thread::isAlive).toList();
        long handedOver = ring.getCursor();
        long first = completedSequence() + 1;
        if (!busy.isEmpty() && first <= handedOver) {
            logger.warn("ringbus shutdown gave up waiting for stage thread(s) {}: {} command(s) still in the ring are "
                                + "failed without waiting for them", describe(busy), handedOver - first + 1);
        }
        boolean storingBusy = busy.stream().anyMatch(thread -> storingThreadNames.contains(thread.getName()));
        // The store stage's sequence moves after each batch it appended; read after the thread ended, it is final.
        long storedUpTo = storeStage != null && !storingBusy ? disruptor.getSequenceValueFor(storeStage) : first - 1;
        Function<String, Throwable> failure = busy.isEmpty() ? Pipeline::shutBeforeCompletion
                : stillBusyFailure(busy, storingBusy);
        for (long sequence = first; sequence <= handedOver; sequence++) {
            CommandSlot slot = ring.get(sequence);
            if (sequence <= storedUpTo) {
                CompleteStage.complete(slot, PipelineMonitor.NONE, callbacks);
            } else if (!busy.isEmpty()) {
                CompleteStage.abandon(slot, failure, callbacks);
            } else if (slot.callback != null) {
                slot.failBeforeHandler(failure.apply(slot.commandName()));
                CompleteStage.complete(slot, PipelineMonitor.NONE, callbacks);
            }
        }
        // Every command has completed or been failed: the callbacks handed over are called before shutdown returns,
        // within the stage threads' grace.
        try {
            callbacks.stop(stageEndGraceNanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Throwable shutBeforeCompletion(String commandName) {
        return new ShutdownInProgressException("ringbus shut down before command [" + commandName + "] completed");
    }

    private static Function<String, Throwable> stillBusyFailure(List<Thread> busy, boolean storingBusy) {
        List<String> names = busy.stream().map(Thread::getName).toList();
        if (storingBusy) {
            return commandName -> new CommitOutcomeUnknownException(
                    "ringbus shut down before command [" + commandName + "] completed, while its stage thread(s) "
                            + names + " had not returned within the shutdown timeout: they may still store the "
                            + "command's events, wholly or not at all; read the aggregate to know", null);
        }
        return commandName -> new ShutdownInProgressException(
                "ringbus shut down before command [" + commandName + "] completed, while its stage thread(s) "
                        + names + " had not returned within the shutdown timeout; the command had not reached the "
                        + "store, whose thread has ended, so nothing of it is stored");
    }

    /** The threads' names with the frames they are in, so that a log says which code kept them. */
    private static String describe(List<Thread> busy) {
        StringBuilder description = new StringBuilder();
        for (Thread thread : busy) {
            description.append(System.lineSeparator()).append("  [").append(thread.getName()).append("]");
            StackTraceElement[] frames = thread.getStackTrace();
            for (int i = 0; i < Math.min(8, frames.length); i++) {
                description.append(System.lineSeparator()).append("    at ").append(frames[i]);
            }
        }
        return description.toString();
    }

    /**
     * The Disruptor's exception handler, which no stage reaches: each runs inside a {@link StageGuard}, which records
     * a failure on its own slot. The processor calls this only when its wait failed, with the slot of the command
     * before (not the one waited for) and then moves past a sequence that may not be handed over yet: a ringbus bug,
     * since its wait strategies never throw. The stale slot is left alone, and the bug is logged.
     */
    private static final class SlotFailureHandler implements ExceptionHandler<CommandSlot> {

        @Override
        public void handleEventException(Throwable ex, long sequence, CommandSlot slot) {
            logger.error("ringbus bug: a stage thread's wait failed at slot {}; the processor moves past it", sequence,
                         ex);
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
