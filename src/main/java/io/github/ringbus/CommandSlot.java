package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.modelling.command.Repository;
import org.axonframework.monitoring.MessageMonitor;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One preallocated slot of the ring: everything the stages know about one dispatched command.
 * <p>
 * Each field is set directly by exactly one stage (or the dispatcher), the one whose section below holds it, and read
 * only by the stages after it; the ring's sequences order those accesses, so the fields are plain. Another stage that
 * must change a field does so through a method named for what it means ({@link #failBeforeHandler},
 * {@link #adoptCreatedAggregate}, {@link #recordStageFailure}); {@code ArchitectureTest} fails on any other write,
 * and on a call of such a method from a class it does not name with its thread. The ring is filled with slots once,
 * at start; a slot's collections are cleared
 * and reused, never reallocated. One exception: who completes the command is decided by a compare-and-set
 * ({@link #claimCompletion()}), because at shutdown a stage thread that user code keeps busy may still reach a slot
 * that the shutting-down thread completes.
 */
final class CommandSlot implements StageTimes, SlotUnitOfWork.Command, AggregateHolder.Borrower {

    private static final VarHandle COMPLETION_CLAIMED;

    static {
        try {
            COMPLETION_CLAIMED = MethodHandles.lookup().findVarHandle(CommandSlot.class, "completionClaimed",
                                                                      boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** The event store this slot's ring stores to: events published on it by the handler join the slot's events. */
    private final EventStore eventStore;

    /** See {@link SlotUnitOfWork.Command#eventQueueKey()}; null on a {@code RingEventStore}. */
    private final String eventQueueKey;

    CommandSlot(EventStore eventStore) {
        this(eventStore, null);
    }

    /**
     * @param eventStore    the event store the slot's ring stores to
     * @param eventQueueKey where the ring stores to one of Axon's event stores that is not a {@code RingEventStore},
     *                      the resource key its event bus queues a Unit of Work's published events under; else null
     */
    CommandSlot(EventStore eventStore, String eventQueueKey) {
        this.eventStore = eventStore;
        this.eventQueueKey = eventQueueKey;
    }

    // --- written by the dispatching thread -------------------------------------------------------------------------
    CommandMessage<?> command;
    CommandCallback<Object, Object> callback;
    /** Whether the command was dispatched on a callback thread, which may be waiting for it (see CallbackThread). */
    boolean dispatchedOnCallbackThread;
    MessageMonitor.MonitorCallback monitorCallback;
    long dispatchedNanos;
    /** The slot's ring sequence, for as long as it holds this command. */
    long sequence;
    /**
     * True once a thread has taken the command on to complete it. Reset only when the slot is filled with its next
     * command ({@link #fill}), never by {@link #clear()}: a late claim on a slot that was completed and cleared must
     * fail, not find an empty slot.
     */
    @SuppressWarnings("unused") // through COMPLETION_CLAIMED
    private boolean completionClaimed;

    // --- written by the preload stage ------------------------------------------------------------------------------
    MessageHandler<? super CommandMessage<?>> handler;
    /**
     * The repository of the target aggregate (a {@link RingRepository}), or null for a handler that is not an
     * aggregate's. Compared, never called: Axon's type, so that the slot does not depend on the repository.
     */
    Repository<?> repository;
    /** The target aggregate, or null for a plain handler and for a creation command that names no target. */
    AggregateHolder<?> holder;
    int segment;
    /** The version the command expects its target aggregate to have, or null. */
    Long expectedVersion;
    /**
     * True when the subscribed handler is Axon's aggregate command handler and the command is an instance command:
     * the handle stage then invokes the preloaded aggregate directly, as that handler would after loading it.
     */
    boolean invokeAggregateDirectly;
    /**
     * Why the command's handler did not (or will not) run: no handler, no target, aggregate not found or unreadable
     * (the preload stage), the aggregate could not be rebuilt before the handler ({@link #failBeforeHandler}, handle
     * stage), a stage's own bug ({@link #recordStageFailure}), a shutdown that finished the command
     * ({@link #failBeforeHandler}). Written directly by the preload stage only.
     */
    Throwable failureBeforeHandler;
    long preloadedNanos;
    /**
     * True for a command of an aggregate with a repository of its own (a state-stored one): the handle stage runs it
     * whole, in a Unit of Work and a transaction of its own (see {@link WholeCommandRunner}).
     */
    boolean runsWhole;
    /**
     * True for a command that runs whole because its handler declares a transaction ({@link TransactionalHandlers}):
     * the handle stage runs it once every earlier command completed, and the ring's repositories serve its loads
     * from the store, in its transaction ({@link OutsideRingRepository}).
     */
    boolean afterEarlierCommands;

    // --- written by the handle stage -------------------------------------------------------------------------------
    final SlotUnitOfWork unitOfWork = new SlotUnitOfWork(this);
    /**
     * The events of the command, in the order the handler produced them: the events its aggregate applied
     * ({@code AggregateLifecycle.apply}) and the events it published on the ring's event store
     * ({@code EventBus.publish}, {@code EventGateway.publish}), interleaved as the handler called them. Stored in one
     * append with the command's batch, or not at all.
     */
    final ArrayList<EventMessage<?>> events = new ArrayList<>(4);
    /**
     * The handler's result (or failure) as the message the caller gets, built on the handler thread while the Unit of
     * Work is current, so that it carries the Unit of Work's correlation data as on Axon's buses.
     */
    CommandResultMessage<?> result;
    Throwable handlerFailure;
    /** True when the handler's failure discards the command's events (the rollback configuration said so). */
    boolean rolledBack;
    /**
     * What the command's run did to aggregates: the generation it ran on, the aggregates commands run in place from
     * its handler borrowed, those it created beside the ring, its runs again ({@link CommandLedger}).
     */
    final CommandLedger ledger = new CommandLedger();
    long handledNanos;
    /**
     * The store shard (store thread) that stores and completes this command: its aggregate's
     * ({@link #storeShardOf}). Written by the handle stage once it knows the aggregate (a creation command without
     * target learns it there), read by every store thread to pick its own slots. Deliberately not reset by
     * {@link #clear()}: the store thread that owns the slot clears it while the others may still be reading this
     * field to learn that the slot is not theirs. Reset by {@link #fill}, which runs only once every store thread
     * has passed the slot; the next command's handle stage writes it before any store thread can reach the slot.
     */
    int storeShard;

    // --- written by the store stage / the publish stage ------------------------------------------------------------
    Throwable storeFailure;
    Throwable publishFailure;

    // --- written by the complete stage -----------------------------------------------------------------------------
    long completingNanos;

    /**
     * Fills the slot with a dispatched command, on the dispatching thread, before the ring publishes its sequence
     * (which orders these plain writes before every stage's reads). Every field is reset first: what the last
     * command left in the slot (normally nothing, as completion clears it) never reaches the next one.
     */
    void fill(long sequence, CommandMessage<?> command, CommandCallback<Object, Object> callback,
              MessageMonitor.MonitorCallback monitorCallback) {
        clear();
        unitOfWork.forget();
        storeShard = 0; // not by clear(): see the field
        this.sequence = sequence;
        this.command = command;
        this.callback = callback;
        this.dispatchedOnCallbackThread = CallbackThread.isCallbackThread();
        this.monitorCallback = monitorCallback;
        COMPLETION_CLAIMED.set(this, false);
    }

    /**
     * Takes the command on to complete it: true for exactly one caller per dispatched command (the complete stage,
     * or a shutdown that gave up waiting for a stage thread), false for every later one.
     */
    boolean claimCompletion() {
        return COMPLETION_CLAIMED.compareAndSet(this, false, true);
    }

    @Override
    public long dispatchedNanos() {
        return dispatchedNanos;
    }

    @Override
    public long preloadedNanos() {
        return preloadedNanos;
    }

    @Override
    public long handledNanos() {
        return handledNanos;
    }

    @Override
    public long completingNanos() {
        return completingNanos;
    }

    /**
     * @return the name of the command in this slot
     */
    String commandName() {
        return command.getCommandName();
    }

    /**
     * Called by the repository while the handler runs, for a creation command that named no target identifier.
     *
     * @param holder the holder of the aggregate the handler created
     */
    void adoptCreatedAggregate(AggregateHolder<?> holder) {
        this.holder = holder;
    }

    /** @return the command's events ({@link #events}), for its Unit of Work and its aggregates' holders */
    @Override
    public List<EventMessage<?>> events() {
        return events;
    }

    /** @return the version the command expects its target aggregate to have ({@link #expectedVersion}), or null */
    @Override
    public Long expectedVersion() {
        return expectedVersion;
    }

    /**
     * @param store an event store
     * @return true when this slot's ring stores its events to {@code store}
     */
    @Override
    public boolean storesTo(EventStore store) {
        return eventStore == store;
    }

    @Override
    public String eventQueueKey() {
        return eventQueueKey;
    }

    /**
     * True when the slot carries a message delivered to an aggregate outside a command (a deadline: see
     * {@link MessageDelivery}), not a command: no command handler interceptors, no handle span, and any failure
     * discards its events, as in the deadline manager's own Unit of Work.
     */
    boolean carriesDelivery() {
        return handler instanceof MessageDelivery;
    }

    /**
     * True when the handler ran and its events are to be stored and published: an aggregate's command or a plain
     * handler's that published events.
     */
    boolean hasEventsToStore() {
        return failureBeforeHandler == null && !rolledBack && !events.isEmpty();
    }

    /**
     * True when the command's outcome was built on an aggregate's state held in memory: its handler ran on its
     * aggregate, or a command it ran in place changed another. Such a command, events or not, is handled again (or
     * failed) when the state it was built on is given up; a command that never reached its handler, or a plain
     * handler's, is not.
     */
    boolean builtOnAggregateState() {
        return failureBeforeHandler == null && ledger.ranOnAggregateState();
    }

    /**
     * The store shard of this slot's command among {@code shards}: the shard of its aggregate's identifier
     * ({@link #spread}), so that all of one aggregate's events go through one store thread, in ring order; for a
     * command without an aggregate in memory (a plain handler, a state-stored aggregate, a failure before the
     * aggregate was known), the shard of its handler segment. Called by the handle stage.
     *
     * @param shards the number of store shards, at least 1
     * @return the shard, in {@code [0, shards)}
     */
    int storeShardOf(int shards) {
        if (shards == 1) {
            return 0;
        }
        AggregateHolder<?> owner = holder;
        String identifier = owner == null ? null : owner.identifier();
        return (identifier == null ? segment : spread(identifier)) % shards;
    }

    /**
     * An aggregate identifier's hash, spread over its bits and made non-negative: what handler segments and store
     * shards are taken from (modulo their count), so one identifier always lands on the same of each.
     *
     * @param identifier an aggregate identifier
     * @return a non-negative number
     */
    static int spread(String identifier) {
        int hash = identifier.hashCode();
        return (hash ^ (hash >>> 16)) & Integer.MAX_VALUE;
    }

    /**
     * The handle stage, or a shutdown finishing the command, found that the handler cannot run: the command fails
     * with {@code failure} and nothing of it is handled or stored.
     *
     * @param failure why
     */
    void failBeforeHandler(Throwable failure) {
        failureBeforeHandler = failure;
    }

    /**
     * The handle stage hands the failure found before the handler to Axon's handler interceptors (which see it as
     * the handler's, as on Axon's buses): it is no longer a failure before the handler.
     *
     * @return the failure found before the handler
     */
    Throwable takeFailureBeforeHandler() {
        Throwable failure = failureBeforeHandler;
        failureBeforeHandler = null;
        return failure;
    }

    /**
     * Records a failure that escaped a stage (a ringbus bug: the stages catch their own), so that the command fails
     * with it; an earlier failure of the command stands. Called by the {@link StageGuard} of the stage's thread.
     */
    void recordStageFailure(Throwable failure) {
        if (failureBeforeHandler == null) {
            failureBeforeHandler = failure;
        }
    }

    /** The first failure any stage recorded, or null. */
    Throwable failure() {
        if (failureBeforeHandler != null) {
            return failureBeforeHandler;
        }
        if (storeFailure != null) {
            // Before the handler's own failure: a command that failed in its handler gets a store failure only when
            // it was built on given-up state and not run again, and then its handler's failure was never real.
            return storeFailure;
        }
        if (rolledBack) {
            return handlerFailure;
        }
        return publishFailure;
    }

    // --- running the command again (ReRuns) --------------------------------------------------------------------------

    /**
     * Forgets what the last run of the command's handler did, so that it can be handled again: its Unit of Work is
     * rolled back (rollback handlers run, as for any discarded attempt; commit handlers never will), its events,
     * result and failure dropped. What the dispatcher and the preload stage wrote stays. Handle stage.
     *
     * @param cause why the last run is discarded, for the rollback handlers
     */
    void prepareReRun(Throwable cause) {
        if (unitOfWork.phase() == UnitOfWork.Phase.PREPARE_COMMIT) {
            unitOfWork.resume();
            try {
                unitOfWork.rollback(cause);
            } catch (RuntimeException | Error rollbackFailure) {
                // As the complete stage does with a failed rollback: the attempt is discarded whatever its handlers do.
                cause.addSuppressed(rollbackFailure);
            }
        }
        unitOfWork.forget();
        ledger.forgetRun();
        events.clear();
        result = null;
        handlerFailure = null;
        rolledBack = false;
        handledNanos = 0;
    }

    // --- the ledger's outcomes that need the slot's own aggregate and events -------------------------------------

    /** This command succeeded: the borrowed aggregates record its events as handled and not yet stored. Handle stage. */
    void borrowedSucceeded() {
        ledger.borrowedSucceeded(events);
    }

    /**
     * This command failed and its events are discarded: each borrowed aggregate is restored to its state before the
     * commands run in place; one that cannot be restored now is read again before its next command, and why is added
     * to {@code failure}. Handle stage.
     */
    void borrowedRolledBack(Throwable failure) {
        ledger.borrowedRolledBack(events, failure);
    }

    /**
     * @return the aggregate whose state this command's events were built on and which the store gave up (an earlier
     * command's events of it failed to be stored), or null; store stage
     */
    AggregateHolder<?> builtOnGivenUpState() {
        return ledger.builtOnGivenUpState(holder);
    }

    /** This command's events failed to be stored: every aggregate they belong to is given up. Store stage. */
    void poisonAggregates() {
        ledger.poison(holder);
    }

    /** This command's events are committed: each aggregate records its last stored event. Store stage. */
    void aggregatesStored() {
        ledger.stored(holder, events);
    }

    /** Drops every reference the slot holds, so a finished command's objects can be collected. */
    void clear() {
        command = null;
        callback = null;
        monitorCallback = null;
        handler = null;
        repository = null;
        holder = null;
        segment = 0;
        expectedVersion = null;
        invokeAggregateDirectly = false;
        failureBeforeHandler = null;
        runsWhole = false;
        afterEarlierCommands = false;
        events.clear();
        result = null;
        handlerFailure = null;
        rolledBack = false;
        ledger.clear();
        storeFailure = null;
        publishFailure = null;
        dispatchedNanos = 0;
        preloadedNanos = 0;
        handledNanos = 0;
        completingNanos = 0;
    }
}
