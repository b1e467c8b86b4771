package io.github.ringbus;

import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.EventHandler;

import java.util.ArrayList;
import java.util.List;

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
 *     of the batch not yet committed fails with that failure. When no transaction could begin, the batches after it
 *     fail at once, without being tried, until the store can be reached again ({@link StoreOutage}).</li>
 *     <li>Except when the commit itself failed without the database saying it rolled back ({@link StoreFailures#rolledBack}): the
 *     transaction may have been committed, so its commands fail with a {@link CommitOutcomeUnknownException} and are
 *     never appended again (a second append would find them stored, or, on an engine without a unique key, store
 *     them twice).</li>
 * </ul>
 * Each failed command's aggregate has its current <em>generation</em> poisoned (see {@link AggregateHolder}):
 * later commands that built on the lost events, including those of the same batch that are still to be tried (they
 * are checked before every attempt), are never stored as they are: this stage first stores or fails everything before
 * them, then has their handler thread handle them again on the aggregate as stored ({@link ReRuns}), or fails those
 * that may not run twice; the next command of the aggregate starts from what is really stored. No state outlives a batch but the outage's: once the database is reachable again the next batch simply succeeds.
 * <p>
 * One thread per instance. With several store threads ({@code storeThreads}), each runs an instance of its own for
 * the commands of its shard of the aggregates ({@link StoreShard}): its own transactions, hence its own connection.
 * With a {@link RingEventStore} this stage appends (and, {@code IN_TRANSACTION}, calls the subscribers);
 * with any other {@link EventStore} it calls {@code publish}, which appends and notifies subscribers in one step, in a
 * Unit of Work of its own per attempt, so that a store that commits with the Unit of Work (Axon Server's) commits the
 * batch as one transaction after the subscribers. The first stored event of each payload type is read back once
 * (see {@link StoreReadBack}); a command the store refused because another writer appended to its aggregate
 * first is handled again on the aggregate as stored where it may be ({@link RefusedBatch#handledAgainOnStored}).
 * Without failure the stage allocates nothing of its own per batch (reused lists), except the list each subscriber
 * is given (subscribers may keep it).
 */
final class StoreStage implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(StoreStage.class);

    private final RingEventStore splitStore;
    private final int maxBatchEvents;
    private final StoreBatchListener batchListener;
    /** Decides what becomes of a failed group and which commands are handled again (the bus's one policy). */
    private final StoreRecovery recovery;
    /** Has the commands the policy lets run again handled again by their handler thread (see ReRuns). */
    private final ReRuns reRuns;
    /** With several store threads on a database, how far this one may store past another's open transaction; else null. */
    private final GapBound gapBound;
    /** This store thread's index among the store threads (its shard), for {@link #gapBound}. */
    private final int shard;
    /** The thread, its time in the store, its failing attempts and failed commands, for health checks. */
    private final StoreHealth health = new StoreHealth();
    /** The store while it cannot be reached: batches fail at once, not tried (see StoreOutage); shared by the bus. */
    private final StoreOutage outage;

    /** Reads the first stored event of each payload type back, once (see StoreReadBack). */
    private final StoreReadBack readBack;

    // Reused for every batch: the hot path allocates no lists of its own.
    private final ArrayList<CommandSlot> batch = new ArrayList<>();
    private final ArrayList<EventMessage<?>> batchEvents = new ArrayList<>();

    /** Whether a command built on a given-up state runs again or fails: the one rule (see GivenUpState). */
    private final GivenUpState givenUp;
    /** One attempt: begin, append (and, IN_TRANSACTION, the subscribers), commit (see StoreTransaction). */
    private final StoreTransaction transaction;

    StoreStage(EventStore eventStore, RingEventStore splitStore, TransactionManager transactionManager,
               int maxBatchEvents, StoreBatchListener batchListener, boolean publishInTransaction,
               LeftInterrupts leftInterrupts, StoreRecovery recovery, ReRuns reRuns, GapBound gapBound, int shard,
               StoreOutage outage, CommitDeadline deadline) {
        this.outage = outage;
        this.recovery = recovery;
        this.gapBound = gapBound;
        this.shard = shard;
        this.reRuns = reRuns;
        this.splitStore = splitStore;
        this.maxBatchEvents = maxBatchEvents;
        this.batchListener = batchListener;
        this.givenUp = new GivenUpState(recovery, reRuns);
        this.readBack = new StoreReadBack(eventStore, splitStore, leftInterrupts);
        this.transaction = new StoreTransaction(eventStore, splitStore, transactionManager, publishInTransaction,
                                                leftInterrupts, deadline);
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        // Not only the commands with events: a query's answer or a rule's refusal was built on the aggregate's state
        // too, and is as wrong as an event when an earlier command of the aggregate is refused.
        if (slot.hasEventsToStore() || slot.builtOnAggregateState()) {
            GivenUpState.Verdict verdict = givenUp.verdict(slot);
            if (verdict == GivenUpState.Verdict.MAY_RUN_AGAIN) {
                // Every command before it in ring order is decided first, so that the store holds every earlier
                // command of its aggregate that will ever be stored; then its handler thread runs it again.
                flush();
                verdict = givenUp.ranAgain(slot) ? GivenUpState.Verdict.STANDS : GivenUpState.Verdict.MUST_FAIL;
            }
            if (verdict == GivenUpState.Verdict.MUST_FAIL) {
                if (slot.hasEventsToStore()) {
                    // Its aggregates are given up with it: the commands in hand, before it in ring order and not built
                    // on it, are decided first (one of another aggregate it borrowed may be among them).
                    flush();
                }
                RefusedBatch.failPoisoned(slot);
                health.failed(1, System.nanoTime());
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

    /** Counts the commands of the batch that failed (the failure path only). */
    private void countFailed(List<CommandSlot> slots) {
        long failed = 0;
        for (int i = 0; i < slots.size(); i++) {
            if (slots.get(i).storeFailure != null) {
                failed++;
            }
        }
        health.failed(failed, System.nanoTime());
    }

    /** @return what this stage's attempts came to: its thread, time in the store, failures; any thread */
    StoreHealth health() {
        return health;
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
        RefusedBatch refused = new RefusedBatch(recovery, reRuns, givenUp);
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

    /**
     * An attempt, recorded in {@link #health}: two clock reads per attempt, nothing allocated. While the store cannot
     * be reached ({@link StoreOutage}) the group is not tried: it fails at once as an attempt that could not begin,
     * which the policy fails whole, each command with the store's failure.
     */
    private StoreAttempt timedAttempt(List<CommandSlot> slots, List<EventMessage<?>> events) {
        long start = System.nanoTime();
        health.attemptStarts(start);
        Throwable away = outage.failure();
        if (away != null) {
            StoreAttempt notTried = StoreAttempt.failed(StoreAttempt.End.BEGIN_FAILED, away);
            health.attemptEnded(start, start, notTried);
            outage.failedAtOnce(slots.size());
            return notTried;
        }
        StoreAttempt attempt = null;
        try {
            attempt = transaction.attempt(slots, events);
            return attempt;
        } finally {
            if (health.attemptEnded(start, System.nanoTime(), attempt)) {
                outage.stored();
            } else if (attempt != null && attempt.end == StoreAttempt.End.BEGIN_FAILED) {
                outage.beginFailed(attempt.failure);
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
                readBack.newTypesOf(slot);
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

}
