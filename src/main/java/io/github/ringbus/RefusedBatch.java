package io.github.ringbus;

import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;

/**
 * The carry-out of one failed batch's recovery: the groups of its commands still to decide, in ring order, and what
 * the {@link StoreRecovery} policy decided for each failed attempt, done ({@link #carryOut}): commands failed, the
 * group tried again after a pause, halved, split at or around the command a subscriber refused, or handed back to be handled again
 * ({@link ReRuns}). {@code StoreStage.recover} keeps the loop (try a group in a fresh transaction, report the outcome
 * here, take the next group), as the Disruptor's {@code BatchEventProcessor} keeps its loop while its
 * {@code BatchRewindStrategy} decides: this class is handed what it calls and never calls the store stage.
 * <p>
 * Also the one place a command is failed for the store ({@link #fail}, {@link #failPoisoned}): it gets its failure and
 * its aggregates' generations are given up ({@link #poison}), so that the commands built on them are handled again or
 * fail in turn.
 * <p>
 * One per failed batch, on its store thread; nothing of it is shared.
 * <p>
 * Tests: {@code StoreStageTest}, {@code StoreRecoveryTest}, {@code behaviour.RefusedAppendNeighboursTest},
 * {@code behaviour.StoreFailureTest}.
 */
final class RefusedBatch {

    private static final Logger logger = LoggerFactory.getLogger(RefusedBatch.class);

    private final StoreRecovery recovery;
    private final ReRuns reRuns;
    /** Whether a command built on a given-up state runs again or fails: the store thread's one rule. */
    private final GivenUpState givenUp;
    /** The groups still to try, in ring order. */
    private final ArrayDeque<List<CommandSlot>> groups = new ArrayDeque<>();
    /**
     * A culprit's aggregate is poisoned only once the commands before it in ring order are done: they did not build on
     * its events, and poisoning would fail those of its generation not yet committed. Keyed by the group it comes
     * before.
     */
    private final IdentityHashMap<List<CommandSlot>, CommandSlot> poisonBefore = new IdentityHashMap<>();
    /** The commands a subscriber refused; their aggregates are poisoned when the batch is done at the latest. */
    private final List<CommandSlot> culprits = new ArrayList<>();
    /** How many times a group of this batch was tried again after a pause ({@link StoreRecovery.Next#TRY_AGAIN_AFTER_PAUSE}). */
    private int triedAgainAfterPause;

    /**
     * @param recovery what becomes of a failed group, and which commands run again
     * @param reRuns   hands a command back to its handler thread to be handled again
     * @param givenUp  the store thread's rule for commands built on a given-up state
     */
    RefusedBatch(StoreRecovery recovery, ReRuns reRuns, GivenUpState givenUp) {
        this.recovery = recovery;
        this.reRuns = reRuns;
        this.givenUp = givenUp;
    }

    /**
     * Does with a failed group what the {@link StoreRecovery} policy decides for it: fails commands, or puts the groups to try next at
     * the head of {@code groups}, in ring order.
     *
     * @return false when every command not yet committed has failed: nothing is left to try
     */
    boolean carryOut(StoreAttempt attempt, List<CommandSlot> group) {
        Throwable failure = attempt.failure;
        switch (recovery.next(attempt, group.size(), attempt.culprit == null ? -1 : group.indexOf(attempt.culprit),
                              triedAgainAfterPause)) {
            case FAIL_OUTCOME_UNKNOWN -> {
                // The group may be committed: appending it again would fail on the events already there or, on an
                // engine without a unique key, store them twice.
                failOutcomeUnknown(group, failure);
            }
            case FAIL_OUTCOME_UNKNOWN_THEN_ALL -> {
                failOutcomeUnknown(group, failure);
                failAll(failure);
                return false;
            }
            case FAIL_ALL -> {
                fail(group, slot -> StoreFailureNotice.unreachable(slot, failure));
                failAll(failure);
                return false;
            }
            case SPLIT_AT_CULPRIT -> {
                // If the culprit was built on a command before it that the store refuses in turn, it is
                // handled again, or fails as built on it, not with what the subscriber said of a state that
                // never was.
                int at = group.indexOf(attempt.culprit);
                groups.addFirst(new ArrayList<>(group.subList(at, group.size())));
                groups.addFirst(new ArrayList<>(group.subList(0, at)));
            }
            case FAIL_CULPRIT -> {
                // Every command before it is decided. Its aggregate's generation is poisoned before the commands after
                // it are tried, so that those that built on it are handled again or fail.
                CommandSlot refused = attempt.culprit;
                refused.storeFailure = failure;
                culprits.add(refused);
                int at = group.indexOf(refused);
                List<CommandSlot> after = new ArrayList<>(group.subList(at + 1, group.size()));
                poisonBefore.put(after, refused);
                groups.addFirst(after);
                groups.addFirst(new ArrayList<>(group.subList(0, at)));
            }
            case HANDLE_AGAIN_ON_STORED -> {
                if (handledAgainOnStored(group.get(0), failure)) {
                    groups.addFirst(group); // tried again in a fresh transaction
                } else {
                    fail(group, failure);
                }
            }
            case TRY_AGAIN_AFTER_PAUSE -> {
                long pause = recovery.pauseBeforeTryingAgain(triedAgainAfterPause++);
                logger.info("The database refused a group of {} command(s) for a conflict between transactions ({});"
                                    + " it is tried again in {} ms", group.size(),
                            StoreFailureNotice.rootCause(failure), pause / 1_000_000.0);
                LockSupport.parkNanos(pause); // no transaction is held: the attempt rolled back
                groups.addFirst(group);
            }
            case FAIL_ALONE -> fail(group, slot -> StoreFailureNotice.refused(slot, failure));
            case HALVE -> {
                int middle = group.size() / 2;
                groups.addFirst(group.subList(middle, group.size()));
                groups.addFirst(group.subList(0, middle));
            }
        }
        return true;
    }

    /**
     * The next group to try: its live commands (see {@link #live}), with their events in {@code events}.
     *
     * @param events cleared, then filled with the group's events to append
     * @return the group, or null when every command of the batch is decided
     */
    List<CommandSlot> nextGroup(List<EventMessage<?>> events) {
        events.clear();
        while (!groups.isEmpty()) {
            List<CommandSlot> group = live(pollNext());
            for (CommandSlot slot : group) {
                if (slot.hasEventsToStore()) {
                    events.addAll(slot.events);
                }
            }
            if (!events.isEmpty()) {
                return group;
            }
        }
        return null;
    }

    /** The batch is done (or given up): every culprit's aggregate is poisoned. */
    void poisonCulprits() {
        for (CommandSlot refused : culprits) {
            poison(refused);
        }
    }

    /** The next group to try, once the culprit that must be poisoned before it is. */
    private List<CommandSlot> pollNext() {
        List<CommandSlot> next = groups.pollFirst();
        CommandSlot refused = poisonBefore.remove(next);
        if (refused != null) {
            poison(refused);
        }
        return next;
    }

    /** The store cannot be reached: every command not yet committed fails. */
    private void failAll(Throwable failure) {
        while (!groups.isEmpty()) {
            // Nothing is run again: it could not be stored either.
            for (CommandSlot slot : pollNext()) {
                if (GivenUpState.isBuiltOn(slot)) {
                    failPoisoned(slot);
                } else {
                    fail(List.of(slot), s -> StoreFailureNotice.unreachable(s, failure));
                }
            }
        }
    }

    /**
     * The commands of a group whose aggregate generation is not poisoned, or that were run again on their aggregate
     * as stored (every group before this one is decided, and a group's poisoned commands of one aggregate are its
     * first of that aggregate); the others fail here. Passengers (built on an aggregate's state, nothing to store)
     * stay in the group, so that a refusal found later among the commands before them still reaches them. A command
     * failed here that gives up aggregates of its own (it has events to store: one built on a given-up aggregate it
     * borrowed, say) waits until the live commands before it are decided: they are not built on it, and giving up
     * their aggregate's generation first would fail them with it. The group is cut before it, and the rest goes back
     * to the head of {@code groups}.
     */
    private List<CommandSlot> live(List<CommandSlot> group) {
        List<CommandSlot> live = new ArrayList<>(group.size());
        for (int i = 0; i < group.size(); i++) {
            CommandSlot slot = group.get(i);
            if (givenUp.mustFailWithEarlierDecided(slot)) { // every group before this one is decided
                if (slot.hasEventsToStore() && !live.isEmpty()) {
                    groups.addFirst(new ArrayList<>(group.subList(i, group.size())));
                    return live;
                }
                failPoisoned(slot);
            } else if (slot.hasEventsToStore() || slot.builtOnAggregateState()) {
                live.add(slot);
            }
        }
        return live;
    }

    /**
     * After the store refused a command because another writer appended to its aggregate first (Axon Server routes an
     * aggregate's commands to another node for a while when nodes join or leave, and the cached aggregate here missed
     * what was stored there): where the policy lets it ({@link StoreRecovery#mayHandleAgainOnStored}), gives up the
     * aggregate's state, so that it is read from the store, and has the command and the later ones of its aggregate
     * handled again on it, as a retry on {@code SimpleCommandBus} would (see {@link ReRuns}). Every command before it
     * in ring order is decided, and no transaction is held.
     *
     * @return true when the command was handled again and its new run is to be stored
     */
    private boolean handledAgainOnStored(CommandSlot slot, Throwable conflict) {
        if (!recovery.mayHandleAgainOnStored(StoreRecovery.Command.of(slot))) {
            return false;
        }
        poison(slot);
        boolean again = reRuns.reRunFrom(slot);
        if (again) {
            // What ringbus did about the refusal, once per conflict: the driver (or Hibernate, at ERROR) has logged
            // the refused statement already, and an operator must not read that as a lost command.
            logger.info("Command [{}] on aggregate [{}]: another writer appended to the aggregate first (the store "
                                + "refused: {}); it is handled again on the aggregate as stored, nothing is lost",
                        slot.commandName(), StoreFailureNotice.aggregateOf(slot),
                        StoreFailureNotice.rootCause(conflict));
        }
        return again;
    }

    /**
     * Fails a command built on a given-up state: nothing of it is stored, and every aggregate its events belong to is
     * given up too (one it ran a command on in place shares its fate). One with no events to store (it answered, or
     * failed and was rolled back, its aggregates restored) left nothing a later command can have built on: its
     * aggregates keep their generation (giving up one it did not change would fail later commands of it that may not
     * run twice, where SimpleCommandBus runs them).
     */
    static void failPoisoned(CommandSlot slot) {
        slot.storeFailure = poisoned(slot);
        if (slot.hasEventsToStore()) {
            poison(slot);
        }
    }

    private static void fail(List<CommandSlot> slots, Throwable failure) {
        fail(slots, slot -> failure);
    }

    /**
     * Fails the commands of {@code slots} that have events to store, each with what {@code told} makes of it (the
     * failure path only: one exception per caller, so that each names its own command, see
     * {@link StoreFailureNotice}), and gives up their aggregates' generations.
     */
    private static void fail(List<CommandSlot> slots, Function<CommandSlot, Throwable> told) {
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            if (!slot.hasEventsToStore()) {
                continue; // a passenger (see onEvent): nothing of it was refused
            }
            slot.storeFailure = told.apply(slot);
            poison(slot);
        }
    }

    private static void failOutcomeUnknown(List<CommandSlot> group, Throwable failure) {
        long commands = group.stream().filter(CommandSlot::hasEventsToStore).count(); // not the passengers
        fail(group, slot -> StoreFailureNotice.outcomeUnknown(slot, commands, failure));
    }

    private static EventStoreException poisoned(CommandSlot slot) {
        return new EventStoreException(
                "Command [" + slot.commandName() + "] was handled on top of events of aggregate ["
                        + slot.builtOnGivenUpState().identifier() + "] that failed to be stored (or whose commit had an unknown "
                        + "outcome); it is rejected, and nothing of it is stored");
    }

    static void poison(CommandSlot slot) {
        slot.poisonAggregates();
    }
}
