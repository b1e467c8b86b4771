package io.github.ringbus;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.AbstractEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.EventHandler;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Stage 3: appends the events of the commands it has in hand in one call and one transaction per batch (group
 * commit), and, in {@link PublishMode#IN_TRANSACTION} (the default), hands each command's events to the event store's
 * subscribers inside that transaction.
 * <p>
 * A batch is every handled command the Disruptor hands this stage at once, cut at the configured number of events.
 * Without failure a batch costs exactly one append and one commit, and its commands complete after the commit
 * returned (the complete stage runs after this one).
 * <p>
 * <b>Failure of a batch.</b> The transaction is rolled back, so nothing of the batch is half-written, and then:
 * <ul>
 *     <li>When a subscriber threw ({@code IN_TRANSACTION}), its command is the culprit: it fails with the
 *     subscriber's exception; the batch's commands before it are tried again, together, in a fresh transaction, then
 *     its aggregate's generation is poisoned (below) and the commands after it are tried. The commands of its
 *     aggregate before it built on nothing it did, so they are stored.</li>
 *     <li>When the append or the commit failed, for whatever reason (a conflict in the data of some command, a value a
 *     column refuses, a serializer's error, a constraint or trigger of the database, any exception of the storage
 *     engine), the batch is <em>isolated</em>: it is split in halves, and each half is appended in a fresh
 *     transaction of its own, in ring order, halving again whatever fails, until the commands that fail on their own
 *     are found. Only those fail (with the failure their own append raised); everything else of the batch is
 *     committed, as on a bus that stores each command in its own transaction. A batch of n commands with k bad ones
 *     costs about 2k&middot;log2(n) transactions.</li>
 *     <li>Except when the store cannot be reached ({@linkplain StoreFailures#unreachable unreachable}: no connection, connection
 *     lost, server shutting down, no transaction could begin): trying again would only fail again, so every command
 *     of the batch not yet committed fails with that failure.</li>
 *     <li>Except when the commit itself failed without the database saying it rolled back ({@link StoreFailures#rolledBack}): the
 *     transaction may have been committed, so its commands fail with a {@link CommitOutcomeUnknownException} and are
 *     never appended again (a second append would find them stored, or, on an engine without a unique key, store
 *     them twice).</li>
 * </ul>
 * Each failed command's aggregate has its current <em>generation</em> poisoned (see {@link AggregateHolder}):
 * later commands that built on the lost events, including those of the same batch that are still to be tried (they
 * are checked before every attempt), are never stored as they are: this stage first stores or fails everything before
 * them, then has their handler thread handle them again on the aggregate as stored ({@link ReRuns}), or fails those
 * that may not run twice; the next command of the aggregate starts from what is really stored. No state outlives a batch: once the database is reachable again the next batch simply succeeds.
 * <p>
 * One thread per instance. With several store threads ({@code storeThreads}), each runs an instance of its own for
 * the commands of its shard of the aggregates ({@link StoreShard}): its own transactions, hence its own connection.
 * With a {@link RingEventStore} this stage appends (and, {@code IN_TRANSACTION}, calls the subscribers);
 * with any other {@link EventStore} it calls {@code publish}, which appends and notifies subscribers in one step, in a
 * Unit of Work of its own per attempt, so that a store that commits with the Unit of Work (Axon Server's) commits the
 * batch as one transaction after the subscribers. The first stored event of each payload type is read back once
 * (see {@link #readBackNewTypes}); a command the store refused because another writer appended to its aggregate
 * first is handled again on the aggregate as stored where it may be ({@link RefusedBatch#handledAgainOnStored}).
 * Without failure the stage allocates nothing of its own per batch (reused lists), except the list each subscriber
 * is given (subscribers may keep it).
 */
final class StoreStage implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(StoreStage.class);

    private final EventStore eventStore;
    private final RingEventStore splitStore;
    private final TransactionManager transactionManager;
    private final int maxBatchEvents;
    private final StoreBatchListener batchListener;
    /** True when this stage calls the subscribers inside its transaction ({@link PublishMode#IN_TRANSACTION}). */
    private final boolean publishInTransaction;
    /** True when nothing can be rolled back: subscribers are then called before the append (see PublishMode). */
    private final boolean subscribersFirst;
    /** Axon's in-memory engine behind a plain event store: publish event by event (see OneByOnePublish). */
    private final boolean publishOneByOne;
    /** Clears an interrupt flag a subscriber left, before the next subscriber or the commit runs on this thread. */
    private final LeftInterrupts leftInterrupts;
    /** Decides what becomes of a failed group and which commands are handled again (the bus's one policy). */
    private final StoreRecovery recovery;
    /** Has the commands the policy lets run again handled again by their handler thread (see ReRuns). */
    private final ReRuns reRuns;
    /** With several store threads on a database, how far this one may store past another's open transaction; else null. */
    private final GapBound gapBound;
    /** This store thread's index among the store threads (its shard), for {@link #gapBound}. */
    private final int shard;
    /**
     * The wall time this stage's thread spent in the store's transactions, summed (see {@link StageThreadTimes}).
     * Written by the store thread only, once per attempt (a plain add published with a release store: one writer);
     * read by whoever asks for the stage threads' times.
     */
    private final AtomicLong inStoreNanos = new AtomicLong();
    /** The thread that runs this stage, set by it at its first attempt; read with {@link #inStoreNanos}. */
    private volatile Thread runner;
    /**
     * When this stage's attempts began to fail one after the other ({@code System.nanoTime()}), or 0 while its last
     * attempt stored; with the time and the failure of its last failed attempt. Written by the store thread after each
     * attempt (a volatile read per attempt, a write only when the state changes); read by {@link #failure(long)}.
     */
    private volatile long failingSinceNanos;
    /** The commands this stage failed, by second; written by its store thread, read by health checks. */
    private final MinuteCount failedCommands = new MinuteCount();
    /** The bus's reads, told when an attempt stored (they may be failing fast while the store was unreachable). */
    private final FailFastReads reads;
    private volatile long lastFailedNanos;
    private volatile Throwable lastFailure;

    /**
     * The payload types whose stored form this store thread has read back from the store once (see readBack). Store
     * thread only; a lookup by class allocates nothing.
     */
    private final Set<Class<?>> readBackTypes = new HashSet<>();
    /** False on Axon's in-memory engine, which stores the events themselves (see readBackNewTypes). */
    private final boolean readsBack;
    /** The event serializer's class, to name it when an event cannot be read back. */
    private final String eventSerializer;

    // Reused for every batch: the hot path allocates no lists of its own.
    private final ArrayList<CommandSlot> batch = new ArrayList<>();
    private final ArrayList<EventMessage<?>> batchEvents = new ArrayList<>();

    // Scratch of the attempt in hand, read once into its StoreAttempt (attemptInTransaction).
    /** The command whose subscriber threw in the attempt in hand (set by publish), or null. */
    private CommandSlot refusedBy;
    /** True when the attempt in hand failed after its subscribers ran (set by publishInUnitOfWork). */
    private boolean failedAfterSubscribers;
    /** True once the batch Unit of Work of the attempt in hand has called the subscribers (see publishInUnitOfWork). */
    private boolean subscribersCalled;

    StoreStage(EventStore eventStore, RingEventStore splitStore, TransactionManager transactionManager,
               int maxBatchEvents, StoreBatchListener batchListener, boolean publishInTransaction,
               LeftInterrupts leftInterrupts, StoreRecovery recovery, ReRuns reRuns, GapBound gapBound, int shard,
               FailFastReads reads) {
        this.reads = reads;
        this.recovery = recovery;
        this.gapBound = gapBound;
        this.shard = shard;
        this.leftInterrupts = leftInterrupts;
        this.reRuns = reRuns;
        this.eventStore = eventStore;
        this.splitStore = splitStore;
        this.transactionManager = transactionManager;
        this.maxBatchEvents = maxBatchEvents;
        this.batchListener = batchListener;
        this.publishInTransaction = publishInTransaction && splitStore != null;
        this.subscribersFirst = transactionManager instanceof NoTransactionManager;
        this.publishOneByOne = splitStore == null && OneByOnePublish.needed(eventStore);
        // Axon's in-memory engine keeps the event objects themselves: nothing was serialized, nothing to read back.
        EventStorageEngine engine = AxonInternals.storageEngineOf(eventStore);
        this.readsBack = !(engine instanceof InMemoryEventStorageEngine);
        this.eventSerializer = engine instanceof AbstractEventStorageEngine axonEngine
                ? axonEngine.getEventSerializer().getClass().getName() : "the event store's";
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        // Not only the commands with events: a query's answer or a rule's refusal was built on the aggregate's state
        // too, and is as wrong as an event when an earlier command of the aggregate is refused.
        if (slot.hasEventsToStore() || slot.builtOnAggregateState()) {
            if (RefusedBatch.isPoisoned(slot) && !ranAgain(slot)) {
                if (slot.hasEventsToStore()) {
                    // Its aggregates are given up with it: the commands in hand, before it in ring order and not built
                    // on it, are decided first (one of another aggregate it borrowed may be among them).
                    flush();
                }
                RefusedBatch.failPoisoned(slot);
                failedCommands.add(1, System.nanoTime());
            } else if (slot.hasEventsToStore()) { // run again, it may have failed in its handler this time
                batch.add(slot);
                List<EventMessage<?>> events = slot.events;
                for (int i = 0; i < events.size(); i++) {
                    batchEvents.add(events.get(i));
                }
                if (batchEvents.size() >= maxBatchEvents) {
                    flush();
                }
            } else if (!batch.isEmpty()) {
                // A passenger: nothing to store, but built on the state left by the commands in hand; should one of
                // them be refused, the halving meets it in ring order and has it handled again (see live()).
                batch.add(slot);
            }
        }
        if (endOfBatch) {
            flush();
        }
    }

    /**
     * Stores the commands in hand: the end of a batch for a caller that hands this stage only some of the ring's
     * slots (a {@link StoreShard}, whose Disruptor batch may end on another shard's slot). Never throws.
     */
    void endBatch() {
        flush();
    }

    private void flush() {
        if (batchEvents.isEmpty()) {
            batch.clear(); // passengers only: nothing of theirs can be refused
            return;
        }
        try {
            StoreAttempt attempt = attempt(batch, batchEvents);
            if (attempt.stored()) {
                stored(batch, batchEvents);
            } else {
                recover(new ArrayList<>(batch), attempt);
                countFailed(batch);
            }
        } catch (RuntimeException | Error bug) {
            // attempt() and recover() catch what the store and user code throw: this is a ringbus bug. Whether the
            // batch is stored is unknown, so none of its commands may report success, nor be appended again.
            logger.error("ringbus bug: the store stage failed on a batch of {} command(s)", batch.size(), bug);
            for (CommandSlot slot : batch) {
                if (slot.storeFailure == null && slot.hasEventsToStore()) {
                    slot.storeFailure = new CommitOutcomeUnknownException(
                            "ringbus failed while storing command [" + slot.commandName() + "]: " + bug, bug);
                    RefusedBatch.poison(slot);
                }
            }
            countFailed(batch);
        } finally {
            batch.clear();
            batchEvents.clear();
        }
    }

    /** Adds the commands of the batch that failed to {@link #failedCommands}: the failure path only. */
    private void countFailed(List<CommandSlot> slots) {
        long failed = 0;
        for (int i = 0; i < slots.size(); i++) {
            if (slots.get(i).storeFailure != null) {
                failed++;
            }
        }
        failedCommands.add(failed, System.nanoTime());
    }

    /**
     * @param now {@code System.nanoTime()} now
     * @return how many commands this stage failed in the last minute (refused, built on refused events, or not
     *         stored because the store could not be reached); any thread
     */
    long failedInLastMinute(long now) {
        return failedCommands.lastMinute(now);
    }

    /**
     * After a failed attempt of a batch: finds, in ring order, the commands that fail on their own and commits the
     * others, each try in a fresh transaction; {@link RefusedBatch} does with each failed group what the
     * {@link StoreRecovery} policy decides. A
     * subscriber's failure fails its command and the rest is tried again; a failed append is halved; a store that
     * cannot be reached fails every command not yet committed.
     *
     * @param failedBatch  the commands of the failed attempt
     * @param firstAttempt how that attempt failed
     */
    private void recover(List<CommandSlot> failedBatch, StoreAttempt firstAttempt) {
        RefusedBatch refused = new RefusedBatch(recovery, reRuns);
        List<EventMessage<?>> events = new ArrayList<>();
        List<CommandSlot> group = failedBatch;
        StoreAttempt attempt = firstAttempt;
        try {
            while (true) {
                if (attempt.stored()) {
                    stored(group, events);
                } else if (!refused.carryOut(attempt, group)) {
                    return; // every command not yet committed has failed
                }
                group = refused.nextGroup(events);
                if (group == null) {
                    return;
                }
                attempt = attempt(group, events);
            }
        } finally {
            refused.poisonCulprits();
        }
    }






    /**
     * Has the command, built on a given-up state of its aggregate, run again on the aggregate as stored, once every
     * command in hand is stored or failed (so that the store holds every earlier command of the aggregate that will
     * ever be stored).
     *
     * @return true when it ran again and is no longer built on given-up state
     */
    private boolean ranAgain(CommandSlot slot) {
        if (!recovery.mayRunAgain(slot)) {
            return false; // and the batch in hand is not cut short for nothing
        }
        flush();
        return reRuns.reRunFrom(slot);
    }




    /**
     * Appends the events (and, in {@code IN_TRANSACTION}, calls each command's subscribers) and commits, in one
     * transaction.
     *
     * @return {@link StoreAttempt#STORED} when committed, else where and how it failed
     */
    private StoreAttempt attempt(List<CommandSlot> slots, List<EventMessage<?>> events) {
        if (gapBound == null) {
            return timedAttempt(slots, events);
        }
        // Several store threads on a database: no more than the bound past another's open transaction (GapBound).
        gapBound.awaitTurn(shard, gapBound.open(shard, events.size()));
        try {
            return timedAttempt(slots, events);
        } finally {
            gapBound.close(shard);
        }
    }

    /** An attempt, its wall time added to {@link #inStoreNanos}: two clock reads per attempt, nothing allocated. */
    private StoreAttempt timedAttempt(List<CommandSlot> slots, List<EventMessage<?>> events) {
        if (runner == null) {
            runner = Thread.currentThread();
        }
        long start = System.nanoTime();
        StoreAttempt attempt = null;
        try {
            attempt = attemptInTransaction(slots, events);
            return attempt;
        } finally {
            long end = System.nanoTime();
            inStoreNanos.lazySet(inStoreNanos.get() + end - start);
            if (attempt != null && attempt.stored()) {
                if (failingSinceNanos != 0) {
                    failingSinceNanos = 0;
                }
                reads.stored();
            } else {
                lastFailure = attempt == null ? null : attempt.failure;
                lastFailedNanos = end;
                if (failingSinceNanos == 0) {
                    failingSinceNanos = start == 0 ? 1 : start;
                }
            }
        }
    }

    /**
     * @param now {@code System.nanoTime()} now
     * @return how this stage's store is failing, or null while its last attempt stored (or none failed)
     */
    StoreFailure failure(long now) {
        long since = failingSinceNanos;
        if (since == 0) {
            return null;
        }
        Throwable failure = lastFailure;
        return new StoreFailure(Duration.ofNanos(now - since), Duration.ofNanos(now - lastFailedNanos),
                                failure == null ? "unknown" : failure.getClass().getName() + ": " + failure.getMessage());
    }

    /** @return the thread that runs this stage, or null before its first attempt */
    Thread runner() {
        return runner;
    }

    /** @return the wall time this stage's thread spent in the store's transactions so far */
    long inStoreNanos() {
        return inStoreNanos.get();
    }

    private StoreAttempt attemptInTransaction(List<CommandSlot> slots, List<EventMessage<?>> events) {
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

    /** The events of these commands are committed: record it, wake tracking processors, tell the listener. */
    private void stored(List<CommandSlot> slots, List<EventMessage<?>> events) {
        int commands = 0;
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            if (slot.hasEventsToStore()) { // not a passenger (see onEvent)
                slot.aggregatesStored();
                readBackNewTypes(slot);
                commands++;
            }
        }
        try {
            if (splitStore != null) {
                splitStore.announceAppended(events);
            }
            batchListener.appended(commands, events.size());
        } catch (RuntimeException e) {
            // The events are committed: the commands succeeded whatever a notification does.
            logger.warn("Notification after appending {} events failed", events.size(), e);
        }
    }

    /**
     * The first time this thread stored an event of a payload type, reads that event back from the store and
     * deserializes it, payload and metadata, as the next load of its aggregate will. {@code SimpleCommandBus} reads an
     * aggregate's events at every command, so a serializer that writes what it cannot read (XStream and a record, say)
     * fails the aggregate's second command; the ring's cache would hide it until the aggregate is next read, after a
     * restart perhaps. When the event cannot be read back, the command that stored it keeps its success (as on
     * {@code SimpleCommandBus}), an error names the type, the serializer's failure and the aggregate, and every
     * aggregate of the command is given up: its next command reads it from the store and fails as on
     * {@code SimpleCommandBus}. Once per payload type and store thread; after that a set lookup per event. Not on Axon's
     * in-memory engine, which serializes nothing.
     */
    private void readBackNewTypes(CommandSlot slot) {
        if (!readsBack) {
            return;
        }
        List<EventMessage<?>> events = slot.events;
        for (int i = 0; i < events.size(); i++) {
            if (!(events.get(i) instanceof DomainEventMessage<?> event) || readBackTypes.contains(event.getPayloadType())) {
                continue;
            }
            Throwable unreadable = readBack(event);
            if (unreadable == null) {
                readBackTypes.add(event.getPayloadType());
            } else if (unreadableAsWritten(event)) {
                // The handler thread found it in the bytes it wrote, said so, and marked the aggregate: its later
                // commands fail as on SimpleCommandBus; giving the generation up would fail them otherwise.
                continue;
            } else {
                logger.error("Events of type [{}] are stored but serializer [{}] cannot read them back: {}. Command [{}] "
                                     + "stored one on aggregate [{}] (sequence {}); the aggregate is read from the "
                                     + "store at its next command, which fails as on SimpleCommandBus until the "
                                     + "serializer configured for events can read the type",
                             event.getPayloadType().getName(), eventSerializer, unreadable, slot.commandName(),
                             event.getAggregateIdentifier(), event.getSequenceNumber(), unreadable);
                RefusedBatch.poison(slot);
                return;
            }
        }
    }

    /**
     * @return true when the event cannot be read back from the bytes written for it either (what the handler thread
     *         checked: {@code HandleStage.readBack}), as opposed to what the store returned
     */
    private boolean unreadableAsWritten(DomainEventMessage<?> event) {
        DomainEventMessage<?> asStored = splitStore == null ? null : splitStore.asStored(event);
        if (asStored == null) {
            return false;
        }
        try {
            asStored.getPayload();
            asStored.getMetaData();
            return false;
        } catch (RuntimeException | LinkageError unreadable) {
            return true;
        }
    }

    /** @return why the stored form of the event cannot be read, or null when it can (or is not found) */
    private Throwable readBack(DomainEventMessage<?> event) {
        try {
            // No Unit of Work on this thread: the store's events only, nothing staged.
            DomainEventStream stored = eventStore.readEvents(event.getAggregateIdentifier(), event.getSequenceNumber());
            while (stored.hasNext()) {
                DomainEventMessage<?> read = stored.next();
                if (read.getSequenceNumber() == event.getSequenceNumber()) {
                    read.getPayload();
                    read.getMetaData();
                    return null;
                }
            }
            return null;
        } catch (RuntimeException | LinkageError unreadable) {
            return unreadable;
        } finally {
            leftInterrupts.clear("store (read back)", null);
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
