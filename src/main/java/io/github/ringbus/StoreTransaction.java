package io.github.ringbus;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;

import java.util.List;

/**
 * One attempt of the store stage to store a group of commands: a transaction begun, their events appended and, in
 * {@link PublishMode#IN_TRANSACTION}, each command's subscribers called (before the append when nothing can be rolled
 * back), then committed; rolled back on any failure, which it reports as a {@link StoreAttempt} (where it failed, and
 * which command's subscriber refused). It decides nothing: what follows a failure is the {@link StoreRecovery}'s. With
 * a plain event store it publishes in a Unit of Work of its own ({@link #publishInUnitOfWork}). One per store thread,
 * used by it alone; its scratch fields hold the attempt in hand. Without failure it allocates nothing but the list
 * each subscriber is given.
 * Tests: {@code StoreStageTest}, {@code behaviour.StoreFailureTest}, {@code behaviour.PublishTest}.
 */
final class StoreTransaction {

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

    // Scratch of the attempt in hand, read once into its StoreAttempt.
    /** The command whose subscriber threw in the attempt in hand (set by publish), or null. */
    private CommandSlot refusedBy;
    /** True when the attempt in hand failed after its subscribers ran (set by publishInUnitOfWork). */
    private boolean failedAfterSubscribers;
    /** True once the batch Unit of Work of the attempt in hand has called the subscribers (see publishInUnitOfWork). */
    private boolean subscribersCalled;

    StoreTransaction(EventStore eventStore, RingEventStore splitStore, TransactionManager transactionManager,
                     boolean publishInTransaction, LeftInterrupts leftInterrupts) {
        this.eventStore = eventStore;
        this.splitStore = splitStore;
        this.transactionManager = transactionManager;
        this.publishInTransaction = publishInTransaction && splitStore != null;
        this.subscribersFirst = transactionManager instanceof NoTransactionManager;
        this.publishOneByOne = splitStore == null && OneByOnePublish.needed(eventStore);
        this.leftInterrupts = leftInterrupts;
    }

    /**
     * Appends the events (and, in {@code IN_TRANSACTION}, calls each command's subscribers) and commits, in one
     * transaction; rolls it back on any failure.
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
        try {
            if (publishInTransaction && subscribersFirst) {
                publish(slots);
            }
            try {
                append(slots, events);
            } finally {
                // The event store is user code too: a flag it left must not fail this batch's commit or the retry.
                leftInterrupts.clear("store (event store append)", null);
            }
            if (publishInTransaction && !subscribersFirst) {
                publish(slots);
            }
        } catch (Throwable failure) {
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
            return StoreAttempt.failed(StoreAttempt.End.COMMIT_FAILED, failure);
        }
        return StoreAttempt.STORED;
    }

    /**
     * Hands each command's events to the subscribers, in ring order, one command at a time. When a subscriber
     * throws, that command becomes the one it was {@link #refusedBy} and the exception propagates (the remaining subscribers and
     * commands are not called).
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
            try {
                // Subscribers may keep the list they are given (an asynchronous processing strategy queues it), and
                // the slot's list is reused: they get a copy of their own.
                splitStore.publishToSubscribers(List.copyOf(slot.events));
            } catch (RuntimeException | Error failure) {
                refusedBy = slot;
                throw failure;
            } finally {
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
     * append transaction for the root Unit of Work) commits in the commit phase, once for the whole batch, or rolls
     * back when a subscriber threw. Without a Unit of Work such a store commits inside {@code publish}, before the
     * subscribers. A failure after the subscribers ran is a failure of the commit ({@link #failedAfterSubscribers}).
     */
    private void publishInUnitOfWork(List<CommandSlot> slots, List<EventMessage<?>> events) {
        subscribersCalled = false;
        // Any message of the batch: the Unit of Work has no correlation data providers, so it adds nothing to the
        // events, which carry their own command's correlation data already.
        DefaultUnitOfWork<?> unitOfWork = DefaultUnitOfWork.startAndGet(slots.get(0).command);
        try {
            eventStore.publish(events);
            // Runs after the event store's own prepare-commit handler (registered by publish), which appended the
            // events and called the subscribers; what fails after it fails in the commit phase, in the store's commit.
            unitOfWork.onPrepareCommit(u -> subscribersCalled = true);
            unitOfWork.commit();
        } catch (RuntimeException | Error failure) {
            if (unitOfWork.isActive()) {
                unitOfWork.rollback(failure);
            }
            if (subscribersCalled) {
                failedAfterSubscribers = true;
            }
            throw failure;
        } finally {
            if (CurrentUnitOfWork.isStarted() && CurrentUnitOfWork.get() == unitOfWork) {
                CurrentUnitOfWork.clear(unitOfWork); // never left behind on the store thread
            }
        }
    }
}
