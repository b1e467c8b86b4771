package io.github.ringbus;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;

/**
 * One attempt of the store stage to store a group of commands: a transaction begun, their events appended and, in
 * {@link PublishMode#IN_TRANSACTION}, each command's subscribers called (before the append when nothing can be rolled
 * back), then committed; rolled back on any failure, which it reports as a {@link StoreAttempt} (where it failed, and
 * which command's subscriber refused). It decides nothing: what follows a failure is the {@link StoreRecovery}'s. With
 * a plain event store it publishes in a Unit of Work of its own ({@link #publishInUnitOfWork}).
 * <p>
 * What the world sees of an attempt: each command's subscribers run in a root {@link StoreUnitOfWork} of that
 * command, whose prepare-commit and commit phases run inside the transaction and whose after-commit phase (query
 * updates, for one) runs only once it committed; the commands they send are held and sent into the ring once it
 * committed, or dropped with it ({@link HeldEffects}). So a batch tried again shows the world each stored command's
 * consequences once, and a failed command's none.
 * <p>
 * One per store thread, used by it alone; its scratch fields hold the attempt in hand. Without subscribers and without
 * failure it allocates nothing; with subscribers, a Unit of Work per command and the list each subscriber is given.
 * Tests: {@code StoreStageTest}, {@code behaviour.StoreFailureTest}, {@code behaviour.PublishTest}.
 */
final class StoreTransaction {

    private static final Logger logger = LoggerFactory.getLogger(StoreTransaction.class);

    private final EventStore eventStore;
    private final RingEventStore splitStore;
    private final TransactionManager transactionManager;
    /** True when subscribers are called inside the transaction ({@link PublishMode#IN_TRANSACTION}). */
    private final boolean publishInTransaction;
    /** True when nothing can be rolled back: subscribers are then called before the append (see PublishMode). */
    private final boolean subscribersFirst;
    /** Axon's in-memory engine behind a plain event store: publish event by event (see OneByOnePublish). */
    private final boolean publishOneByOne;
    /** Clears an interrupt flag a subscriber or the store left, before the next subscriber or the commit runs. */
    private final LeftInterrupts leftInterrupts;
    /** How late after their timestamp events may be committed; null where the engine has no gap timeout. */
    private final CommitDeadline deadline;

    // Scratch of the attempt in hand, read once into its StoreAttempt.
    /** The command whose subscriber threw in the attempt in hand (set by publish), or null. */
    private CommandSlot refusedBy;
    /** True when the attempt in hand failed after its subscribers ran (set by publishInUnitOfWork). */
    private boolean failedAfterSubscribers;
    /** True once the batch Unit of Work of the attempt in hand has called the subscribers (see publishInUnitOfWork). */
    private boolean subscribersCalled;
    /** The Units of Work the subscribers of the attempt in hand ran in, in ring order (reused). */
    private final ArrayList<StoreUnitOfWork> unitsOfWork = new ArrayList<>();
    /** The command whose subscribers ran in each of {@link #unitsOfWork}, at the same index; null: the whole batch. */
    private final ArrayList<CommandSlot> subscribedFor = new ArrayList<>();
    /** The commands the subscribers of the attempt in hand sent, and the events they published, until it ends. */
    private final HeldEffects held = new HeldEffects();

    StoreTransaction(EventStore eventStore, RingEventStore splitStore, TransactionManager transactionManager,
                     boolean publishInTransaction, LeftInterrupts leftInterrupts, CommitDeadline deadline) {
        this.eventStore = eventStore;
        this.splitStore = splitStore;
        this.transactionManager = transactionManager;
        this.publishInTransaction = publishInTransaction && splitStore != null;
        this.subscribersFirst = transactionManager instanceof NoTransactionManager;
        this.publishOneByOne = splitStore == null && OneByOnePublish.needed(eventStore);
        this.leftInterrupts = leftInterrupts;
        this.deadline = deadline;
    }

    /**
     * Appends the events (and, in {@code IN_TRANSACTION}, calls each command's subscribers) and commits, in one
     * transaction; rolls it back on any failure. What the subscribers leave for after their Unit of Work's commit, and
     * the commands they send, reach the world only once the transaction committed ({@link StoreUnitOfWork},
     * {@link HeldEffects}); for an attempt that fails, never.
     *
     * @return {@link StoreAttempt#STORED} when committed, else where and how it failed
     */
    StoreAttempt attempt(List<CommandSlot> slots, List<EventMessage<?>> events) {
        refusedBy = null;
        failedAfterSubscribers = false;
        Transaction transaction;
        try {
            transaction = transactionManager.startTransaction();
        } catch (Throwable failure) {
            return StoreAttempt.failed(StoreAttempt.End.BEGIN_FAILED, failure);
        }
        // After the begin, which may have waited for a connection: nothing is appended that tracking processors
        // could meet too late after its timestamp (CommitDeadline).
        CommandSlot late = deadline == null ? null : deadline.firstLate(slots);
        if (late != null) {
            Throwable failure = deadline.failure(late);
            try {
                transaction.rollback();
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
            return StoreAttempt.tooLate(late, failure);
        }
        held.begin(publishInTransaction && subscribersFirst);
        try {
            if (publishInTransaction && subscribersFirst) {
                publish(slots);
            }
            try {
                if (held.holdsAppends()) {
                    // What the subscribers published, each after the events that caused it (see HeldEffects).
                    held.appendInterleaved(splitStore, slots);
                } else {
                    append(slots, events);
                }
            } finally {
                // The event store is user code too: a flag it left must not fail this batch's commit or the retry.
                leftInterrupts.clear("store (event store append)", null);
            }
            if (publishInTransaction && !subscribersFirst) {
                publish(slots);
            }
            commitPhases();
        } catch (Throwable failure) {
            abandon(failure);
            try {
                transaction.rollback();
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
            return refusedBy != null ? StoreAttempt.refusedBySubscriber(refusedBy, failure)
                    : StoreAttempt.failed(failedAfterSubscribers ? StoreAttempt.End.COMMIT_FAILED
                                                                 : StoreAttempt.End.APPEND_FAILED, failure);
        }
        try {
            transaction.commit();
        } catch (Throwable failure) {
            abandon(failure);
            return StoreAttempt.failed(StoreAttempt.End.COMMIT_FAILED, failure);
        }
        held.release();
        afterCommit();
        return StoreAttempt.STORED;
    }

    /**
     * The commit phase of each Unit of Work the subscribers ran in, in ring order, inside the transaction. One that
     * fails refuses its command ({@link #refusedBy}), as a subscriber that throws does; on a plain event store, where
     * the batch has one and a store may commit its append there (Axon Server's), it is a failure of the commit.
     */
    private void commitPhases() {
        for (int i = 0; i < unitsOfWork.size(); i++) {
            try {
                unitsOfWork.get(i).commitPhase();
            } catch (RuntimeException | Error failure) {
                if (splitStore != null) {
                    refusedBy = subscribedFor.get(i);
                } else {
                    failedAfterSubscribers = true;
                }
                throw failure;
            }
        }
    }

    /** The transaction committed: the after-commit phase of each Unit of Work the subscribers ran in, in ring order. */
    private void afterCommit() {
        for (int i = 0; i < unitsOfWork.size(); i++) {
            try {
                unitsOfWork.get(i).afterCommit();
            } catch (RuntimeException | Error failure) {
                // Axon logs what its after-commit handlers throw; this is what its cleanup threw. Stored all the same.
                logger.warn("A cleanup handler of the subscribers of command [{}] failed after its events were stored",
                            unitsOfWork.get(i).getMessage().getCommandName(), failure);
            }
        }
        unitsOfWork.clear();
        subscribedFor.clear();
    }

    /** The attempt failed: every Unit of Work its subscribers ran in is rolled back, and what they held dropped. */
    private void abandon(Throwable cause) {
        for (int i = unitsOfWork.size() - 1; i >= 0; i--) {
            try {
                unitsOfWork.get(i).abandon(cause);
            } catch (RuntimeException | Error rollbackFailure) {
                cause.addSuppressed(rollbackFailure);
            }
        }
        unitsOfWork.clear();
        subscribedFor.clear();
        held.drop();
    }

    /**
     * Hands each command's events to the subscribers, in ring order, one command at a time, each in a root
     * {@link StoreUnitOfWork} of its own whose prepare-commit phase follows at once (sagas stored, events the
     * subscribers published appended and handed to their own subscribers). When a subscriber (or that phase) throws,
     * that command becomes the one it was {@link #refusedBy} and the exception propagates (the remaining subscribers
     * and commands are not called).
     */
    private void publish(List<CommandSlot> slots) {
        if (!splitStore.hasSubscribers()) {
            return;
        }
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            if (!slot.hasEventsToStore()) {
                continue; // a passenger (see onEvent)
            }
            // Allocated per command that has subscribers, as Axon allocates a Unit of Work per command and a
            // subscribing processor one per call: the subscribers' Units of Work nest in it (see StoreUnitOfWork).
            held.publishingFor(i);
            StoreUnitOfWork unitOfWork = StoreUnitOfWork.startFor(slot.command, held);
            unitsOfWork.add(unitOfWork);
            subscribedFor.add(slot);
            try {
                // Subscribers may keep the list they are given (an asynchronous processing strategy queues it), and
                // the slot's list is reused: they get a copy of their own.
                splitStore.publishToSubscribers(List.copyOf(slot.events));
                unitOfWork.prepare();
            } catch (RuntimeException | Error failure) {
                refusedBy = slot;
                throw failure;
            } finally {
                unitOfWork.pause();
                leftInterrupts.clear("store (subscribers)", slot.command);
            }
        }
    }

    private void append(List<CommandSlot> slots, List<EventMessage<?>> events) {
        if (splitStore != null) {
            splitStore.appendStaged(events);
        } else if (publishOneByOne) {
            OneByOnePublish.publish(eventStore, events);
        } else {
            publishInUnitOfWork(slots, events);
        }
    }

    /**
     * Publishes the batch to a plain event store in one Unit of Work, as {@code SimpleCommandBus} publishes one command's
     * events in the command's: in the prepare-commit phase the store appends and then calls its subscribers (Axon's
     * {@code AbstractEventStore}), and a store that commits with the Unit of Work ({@code AxonServerEventStore}: one
     * append transaction for the root Unit of Work) commits in the commit phase ({@link #commitPhases}), once for the
     * whole batch, or rolls back when a subscriber threw; its after-commit phase runs once the transaction committed.
     * Without a Unit of Work such a store commits inside {@code publish}, before the subscribers. A failure after the
     * subscribers ran is a failure of the commit ({@link #failedAfterSubscribers}).
     */
    private void publishInUnitOfWork(List<CommandSlot> slots, List<EventMessage<?>> events) {
        subscribersCalled = false;
        // Any message of the batch: the Unit of Work has no correlation data providers, so it adds nothing to the
        // events, which carry their own command's correlation data already.
        StoreUnitOfWork unitOfWork = StoreUnitOfWork.startFor(slots.get(0).command, held);
        unitsOfWork.add(unitOfWork);
        subscribedFor.add(null);
        try {
            eventStore.publish(events);
            // Runs after the event store's own prepare-commit handler (registered by publish), which appended the
            // events and called the subscribers; what fails after it fails in the commit phase, in the store's commit.
            unitOfWork.onPrepareCommit(u -> subscribersCalled = true);
            unitOfWork.prepare();
        } catch (RuntimeException | Error failure) {
            if (subscribersCalled) {
                failedAfterSubscribers = true;
            }
            throw failure;
        } finally {
            unitOfWork.pause(); // never left current on the store thread
        }
    }
}
