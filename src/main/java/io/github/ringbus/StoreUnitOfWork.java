package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * The root Unit of Work in which the store stage calls one command's subscribers, the part of that command's own Unit
 * of Work that {@code SimpleCommandBus} calls them in: a subscribing processor's Unit of Work nests in it, so that
 * what the subscribers leave for later is kept for the batch's transaction, as on {@code SimpleCommandBus} it is kept
 * for the command's.
 * <p>
 * Its commit is taken apart into the steps of one store attempt: {@link #prepare()} (prepare-commit: Axon's event
 * bus appends the events the subscribers published and calls their subscribers, Axon's saga repository stores the
 * sagas they touched) and {@link #commitPhase()} run inside the batch's transaction, before its commit;
 * {@link #afterCommit()} (after-commit: Axon's query update emitter sends the updates the subscribers emitted, the
 * event store wakes its tracking processors) runs once the transaction committed. When the attempt fails at any step
 * it is {@link #abandon abandoned}: rolled back, with every Unit of Work nested in it, and its after-commit handlers
 * never run. So what the subscribers did for an attempt that was rolled back, and is tried again, reaches the world
 * once: from the attempt that committed.
 * <p>
 * The commands the subscribers send are held by the attempt's {@link HeldEffects}, which finds them through this Unit
 * of Work as the root of theirs; the events they publish before a non-transactional append wait for it
 * ({@link DeferredAppends}).
 * <p>
 * Between the steps it is not the thread's current Unit of Work (the next command's is started as a root of its own);
 * each step makes it current again. Store thread only.
 * <p>
 * Tests: {@code StoreUnitOfWorkTest}, {@code behaviour.BatchEffectsTest}.
 */
final class StoreUnitOfWork extends DefaultUnitOfWork<CommandMessage<?>> implements DeferredAppends {

    private static final Logger logger = LoggerFactory.getLogger(StoreUnitOfWork.class);

    /** What the attempt this Unit of Work belongs to holds until it ends. */
    private final HeldEffects held;

    private StoreUnitOfWork(CommandMessage<?> command, HeldEffects held) {
        super(command);
        this.held = held;
    }

    /**
     * @return what the store attempt whose subscribers run on the calling thread holds until it ends (the commands
     * they send, see {@link HeldEffects}), or null when none is open (the current Unit of Work's root is no store
     * Unit of Work, or its attempt was already released)
     */
    static HeldEffects heldByCurrent() {
        return CurrentUnitOfWork.isStarted() && CurrentUnitOfWork.get().root() instanceof StoreUnitOfWork store
                && store.held.isOpen() ? store.held : null;
    }

    @Override
    public boolean deferAppend(EventStore store, List<? extends EventMessage<?>> events) {
        return held.deferAppend(store, events);
    }

    /**
     * Starts one as the thread's current Unit of Work, a root, as a command's is.
     *
     * @param command the command whose subscribers are called in it
     * @param held    what its attempt holds until it ends
     * @return the started Unit of Work
     */
    static StoreUnitOfWork startFor(CommandMessage<?> command, HeldEffects held) {
        while (CurrentUnitOfWork.isStarted()) {
            // A Unit of Work user code started on the store thread and never ended would make this one nested and
            // commit with it: it is dropped, so that it cannot swallow the batch.
            UnitOfWork<?> left = CurrentUnitOfWork.get();
            logger.warn("ringbus: a Unit of Work was left current on store thread [{}] (by a subscriber, or the "
                                + "event store); it is dropped: {}", Thread.currentThread().getName(), left);
            CurrentUnitOfWork.clear(left);
        }
        StoreUnitOfWork unitOfWork = new StoreUnitOfWork(command, held);
        unitOfWork.start();
        return unitOfWork;
    }

    /** No longer the thread's current Unit of Work, until its next step; it stays in its phase. */
    void pause() {
        if (isCurrent()) {
            CurrentUnitOfWork.clear(this);
        }
    }

    /**
     * The prepare-commit phase; it then pauses. When a handler of the phase throws, the Unit of Work is rolled back
     * and closed (as Axon's commit does) and the failure propagates.
     */
    void prepare() {
        step(Phase.PREPARE_COMMIT);
    }

    /**
     * The commit phase (handlers that commit with the Unit of Work, such as Axon Server's append); it then pauses. When
     * a handler throws, the Unit of Work is rolled back and closed and the failure propagates.
     */
    void commitPhase() {
        step(Phase.COMMIT);
    }

    private void step(Phase phase) {
        resume();
        try {
            changePhase(phase);
        } catch (RuntimeException | Error failure) {
            rollBackAndClose(failure);
            throw failure;
        }
        pause();
    }

    /**
     * The after-commit, cleanup and closed phases, once the batch's transaction committed. What an after-commit
     * handler throws is logged by Axon, as after any commit: the command is stored.
     */
    void afterCommit() {
        resume();
        try {
            changePhase(Phase.AFTER_COMMIT);
        } finally {
            try {
                changePhase(Phase.CLEANUP, Phase.CLOSED);
            } finally {
                pause();
            }
        }
    }

    /**
     * Rolls it back (and every Unit of Work nested in it), unless it already ended: the attempt it belongs to failed.
     *
     * @param cause why
     */
    void abandon(Throwable cause) {
        if (!isActive()) {
            return; // rolled back and closed by the step that failed
        }
        resume();
        rollback(cause); // rolls back, cleans up, closes, and is no longer current
    }

    private void rollBackAndClose(Throwable failure) {
        setRollbackCause(failure);
        try {
            changePhase(Phase.ROLLBACK);
        } finally {
            try {
                changePhase(Phase.CLEANUP, Phase.CLOSED);
            } finally {
                pause();
            }
        }
    }

    private void resume() {
        if (!isCurrent()) {
            CurrentUnitOfWork.set(this);
        }
    }
}
