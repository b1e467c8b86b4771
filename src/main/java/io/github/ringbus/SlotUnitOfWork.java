package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.ResultMessage;
import org.axonframework.messaging.unitofwork.AbstractUnitOfWork;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.ExecutionResult;
import org.axonframework.messaging.unitofwork.MessageProcessingContext;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.messaging.unitofwork.UnitOfWork;

import java.util.AbstractList;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import static org.axonframework.messaging.GenericResultMessage.asResultMessage;

/**
 * The Unit of Work of one slot, reused for every command that passes through the slot.
 * <p>
 * It is started on the handle stage's thread, where the handler and Axon's handler interceptors find it as the
 * current Unit of Work, and its prepare-commit phase runs there too, right after the handler, so that a
 * prepare-commit handler can still fail the command before its events go to the store. It is then paused, and
 * resumed on the complete stage's thread, where its commit and after-commit phases run (after the command's events
 * were stored) or it rolls back. It is always a root Unit of Work; a command its handler sends may run in place in a
 * Unit of Work nested in it (see {@link NestedDispatch}), otherwise later, in a slot of its own.
 * <p>
 * Tests: {@code behaviour.UnitOfWorkTest}, {@code behaviour.AxonNestedUnitOfWorkTest}.
 */
final class SlotUnitOfWork extends AbstractUnitOfWork<CommandMessage<?>> implements PublishedEventCollector {

    /** The resource that marks a Unit of Work nested in a slot's for a command the ring runs in place. */
    private static final String RUN_IN_PLACE = SlotUnitOfWork.class.getName() + ".runInPlace";

    private static final Logger logger = LoggerFactory.getLogger(SlotUnitOfWork.class);
    private static final Phase[] PHASES = Phase.values();

    /** The command of the slot this Unit of Work belongs to (the slot itself). */
    private final Command slot;
    /** The message and the execution result; its handlers are kept in {@link #handlersByPhase} instead. */
    private final MessageProcessingContext<CommandMessage<?>> context = new MessageProcessingContext<>(null);
    /**
     * The phase handlers, one deque per phase by ordinal, made once per slot and emptied for each command: Axon's
     * {@code MessageProcessingContext} drops its deques on every reset, and {@code AbstractUnitOfWork.start} adds a
     * rollback handler to every Unit of Work, so reusing its map cost a new deque per command.
     */
    private final ArrayDeque<Consumer<UnitOfWork<CommandMessage<?>>>>[] handlersByPhase;
    /** False once prepare-commit handlers were registered when the command prepared its commit. */
    private boolean preparedWithoutHandlers = true;
    /**
     * What Axon's event bus finds as its queue of this Unit of Work when the ring stores to one of Axon's event
     * stores that is not a {@code RingEventStore} (see {@link #startFor}); made once per slot. Handle stage.
     */
    private final PublishedQueue publishedQueue = new PublishedQueue();

    @SuppressWarnings("unchecked")
    SlotUnitOfWork(Command slot) {
        this.slot = slot;
        this.handlersByPhase = new ArrayDeque[PHASES.length];
        for (int i = 0; i < PHASES.length; i++) {
            handlersByPhase[i] = new ArrayDeque<>(4);
        }
    }

    /**
     * @return the slot whose command this Unit of Work processes, as this Unit of Work knows it (the ring's
     *         {@code CommandSlot}, which its callers cast it to)
     */
    Command slot() {
        return slot;
    }

    /**
     * The slot's command as its Unit of Work sees it: the list its events are collected in, and the event store its
     * ring stores to. The ring's slot ({@code CommandSlot}) is one; an interface of the Unit of Work's own, so that
     * the Unit of Work does not depend on the slot that refers to it (no dependency loop: {@code ArchitectureTest}).
     * Handle stage.
     */
    interface Command {

        /** @return the command's events, in the order its handler produced them */
        List<EventMessage<?>> events();

        /** @return true when the slot's ring stores its events to {@code store} */
        boolean storesTo(EventStore store);

        /**
         * @return the Unit of Work resource key under which Axon's event bus queues what is published on the ring's
         * event store, where that store is one of Axon's own and not a {@code RingEventStore}
         * ({@link AxonInternals#eventQueueKeyOf}); null otherwise
         */
        String eventQueueKey();
    }

    /**
     * Adds events the handler publishes on the event bus to the command's events, after the events it produced
     * before, so that the store stage stores them in the handler's order, in the command's batch and transaction,
     * and drops them if the command fails. Called on the handle stage's thread by {@code RingEventStore.publish}.
     *
     * @param store  the event store the events were published on
     * @param events the published events
     * @return true when the events were taken; false when this slot's ring does not store to {@code store} or the
     * command is past its prepare-commit phase (the caller then publishes them as Axon's event bus would)
     */
    @Override
    public boolean collectPublished(EventStore store, List<? extends EventMessage<?>> events) {
        Phase phase = phase();
        if (!slot.storesTo(store) || phase == Phase.NOT_STARTED || phase.isAfter(Phase.PREPARE_COMMIT)) {
            return false;
        }
        slot.events().addAll(events);
        return true;
    }

    /**
     * Takes back events {@link #collectPublished collected} for a nested Unit of Work that rolled back, on the
     * handler thread, before the slot's command completes its prepare-commit phase.
     *
     * @param events the very event messages that were collected
     */
    @Override
    public void discardPublished(List<? extends EventMessage<?>> events) {
        for (EventMessage<?> event : events) {
            List<EventMessage<?>> collected = slot.events();
            for (int i = collected.size() - 1; i >= 0; i--) {
                if (collected.get(i) == event) {
                    collected.remove(i);
                    break;
                }
            }
        }
    }

    @Override
    public List<? extends EventMessage<?>> collected(EventStore store) {
        Phase phase = phase();
        if (!slot.storesTo(store) || phase == Phase.NOT_STARTED || phase.isAfter(Phase.PREPARE_COMMIT)) {
            return List.of();
        }
        return slot.events();
    }

    /** Marks a Unit of Work {@link NestedDispatch} started, nested in a slot's, for a command run in place. */
    static void markRunInPlace(UnitOfWork<?> nested) {
        nested.resources().put(RUN_IN_PLACE, Boolean.TRUE);
    }

    /**
     * @return true when {@code unitOfWork} was started by the ring for a command it runs in place; false for one that
     * other code nested in a ring command's (a command bus beside the ring)
     */
    static boolean runInPlace(UnitOfWork<?> unitOfWork) {
        return unitOfWork.resources().containsKey(RUN_IN_PLACE);
    }

    /** Prepares this Unit of Work for the slot's next command and makes it the current one of this thread. */
    void startFor(CommandMessage<?> command) {
        context.reset(command);
        empty();
        String queueKey = slot.eventQueueKey();
        if (queueKey != null) {
            // Axon's event bus queues what is published in a Unit of Work under this key, and registers its own
            // prepare-commit append only when it makes the queue: found here, the queue is the command's, and the
            // events join the slot's in the handler's order (the put allocates a map entry; only on a plain store).
            publishedQueue.clear();
            resources().put(queueKey, publishedQueue);
        }
        start();
    }

    /**
     * The queue Axon's {@code AbstractEventBus} adds a ring command's published events to on a plain event store: each
     * event it is given is added to the slot's events at once, after those the handler produced before (as
     * {@link #collectPublished} does for a {@code RingEventStore}), and kept here so that Axon's event store still
     * finds what it staged in this Unit of Work when it reads an aggregate ({@code stagedDomainEventMessages}). Only
     * appends are supported, which is all Axon does with it. A nested Unit of Work keeps a queue of its own, which
     * Axon adds here at its prepare-commit, or drops when it rolls back. Handle stage.
     */
    private final class PublishedQueue extends AbstractList<EventMessage<?>> {

        private final ArrayList<EventMessage<?>> published = new ArrayList<>(4);

        @Override
        public EventMessage<?> get(int index) {
            return published.get(index);
        }

        @Override
        public int size() {
            return published.size();
        }

        @Override
        public void add(int index, EventMessage<?> event) {
            if (index != published.size()) {
                throw new UnsupportedOperationException("A ring command's published events can only be appended");
            }
            published.add(event);
            slot.events().add(event);
        }

        @Override
        public boolean addAll(Collection<? extends EventMessage<?>> events) {
            published.addAll(events);
            slot.events().addAll(events);
            return !events.isEmpty();
        }

        @Override
        public void clear() {
            published.clear();
        }
    }

    /**
     * Forgets a command whose Unit of Work was left part-way (started, or paused after its prepare-commit phase,
     * and then never completed: a command failed without its slot being touched, at a shutdown that gave up on a
     * stage thread), so that nothing of it can be resumed or committed for the slot's next command. Called when the
     * slot is filled again; does nothing to a Unit of Work that was never started or has ended.
     */
    void forget() {
        Phase phase = phase();
        if (phase == Phase.NOT_STARTED || phase == Phase.CLOSED) {
            return;
        }
        empty();
    }

    /** Drops the last command's phase handlers, resources and correlation data, and sets the phase back. */
    private void empty() {
        for (ArrayDeque<Consumer<UnitOfWork<CommandMessage<?>>>> handlers : handlersByPhase) {
            handlers.clear(); // those of phases the last command never reached (its rollback handler, say)
        }
        setPhase(Phase.NOT_STARTED);
        preparedWithoutHandlers = true;
        resources().clear();
        correlationDataProviders().clear();
    }

    void recordResult(Object result) {
        context.setExecutionResult(new ExecutionResult(asResultMessage(result)));
    }

    /**
     * Runs the prepare-commit phase's handlers on the handle stage's thread. If one throws, the exception propagates
     * and the Unit of Work is left in that phase, for the caller to roll it back.
     */
    void prepareCommit() {
        ArrayDeque<Consumer<UnitOfWork<CommandMessage<?>>>> handlers = handlersByPhase[Phase.PREPARE_COMMIT.ordinal()];
        preparedWithoutHandlers = handlers.isEmpty();
        changePhase(Phase.PREPARE_COMMIT);
    }

    /**
     * @return true unless prepare-commit handlers ran for the current command (what they did happened, so the
     * command cannot be handled again as if it never ran; see {@link StoreRecovery#mayRunAgain})
     */
    boolean preparedWithoutHandlers() {
        return preparedWithoutHandlers;
    }

    /**
     * Runs the commit and after-commit phases on the complete stage's thread, then cleans up, like the end of
     * {@link #commit()}. If a commit handler throws, the Unit of Work rolls back and the exception propagates.
     */
    void finishCommit() {
        try {
            try {
                changePhase(Phase.COMMIT);
            } catch (RuntimeException | Error failure) {
                setRollbackCause(failure);
                changePhase(Phase.ROLLBACK);
                throw failure;
            }
            changePhase(Phase.AFTER_COMMIT);
        } finally {
            changePhase(Phase.CLEANUP, Phase.CLOSED);
            CurrentUnitOfWork.clear(this);
        }
    }

    /** Detaches this Unit of Work from the current thread (the handle stage) without ending it. */
    void pause() {
        CurrentUnitOfWork.clear(this);
    }

    /** Attaches this Unit of Work to the current thread (the complete stage) to commit or roll it back. */
    void resume() {
        CurrentUnitOfWork.set(this);
    }

    @Override
    public Optional<UnitOfWork<?>> parent() {
        return Optional.empty();
    }

    @Override
    public CommandMessage<?> getMessage() {
        return context.getMessage();
    }

    @Override
    public UnitOfWork<CommandMessage<?>> transformMessage(
            Function<CommandMessage<?>, ? extends org.axonframework.messaging.Message<?>> transformOperator) {
        context.transformMessage(transformOperator);
        return this;
    }

    @Override
    public ExecutionResult getExecutionResult() {
        return context.getExecutionResult();
    }

    @Override
    public <R> ResultMessage<R> executeWithResult(Callable<R> task, RollbackConfiguration rollbackConfiguration) {
        throw new UnsupportedOperationException(
                "A ringbus slot's Unit of Work is driven by the pipeline's stages, not by executeWithResult");
    }

    /** As Axon's {@code MessageProcessingContext.notifyHandlers}: in order, each handler once, errors as the phase says. */
    @Override
    protected void notifyHandlers(Phase phase) {
        ArrayDeque<Consumer<UnitOfWork<CommandMessage<?>>>> handlers = handlersByPhase[phase.ordinal()];
        while (!handlers.isEmpty()) {
            try {
                handlers.remove().accept(this);
            } catch (Exception e) {
                if (phase.isSuppressHandlerErrors()) {
                    logger.info("An error occurred while executing a lifecycle phase handler for phase {}", phase, e);
                } else {
                    throw e;
                }
            }
        }
    }

    /** As Axon's {@code MessageProcessingContext.addHandler}: in order of registration, or reversed for the phases Axon reverses. */
    @Override
    protected void addHandler(Phase phase, Consumer<UnitOfWork<CommandMessage<?>>> handler) {
        ArrayDeque<Consumer<UnitOfWork<CommandMessage<?>>>> handlers = handlersByPhase[phase.ordinal()];
        if (phase.isReverseCallbackOrder()) {
            handlers.addFirst(handler);
        } else {
            handlers.add(handler);
        }
    }

    @Override
    protected void setExecutionResult(ExecutionResult executionResult) {
        context.setExecutionResult(executionResult);
    }

    @Override
    protected void setRollbackCause(Throwable cause) {
        setExecutionResult(new ExecutionResult(asResultMessage(cause)));
    }
}
