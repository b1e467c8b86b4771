package io.github.ringbus;

import org.axonframework.eventhandling.DomainEventMessage;

import java.util.List;

/**
 * The recovery policy of refused appends, in one place: after an attempt to store a group of commands failed
 * ({@link StoreAttempt}), decides what becomes of that group next ({@link #next}), and whether a command is handled
 * again: one built on a state of its aggregate that the store refused ({@link #mayRunAgain}), or one the store refused
 * because another writer appended to its aggregate first ({@link #mayHandleAgainOnStored}). The Disruptor's
 * {@code BatchRewindStrategy} is the model: an outcome in, one action out, the caller carries it out
 * ({@code StoreStage.recover}, which tries the groups in ring order, each in a fresh transaction; {@link ReRuns} and
 * {@code HandleStage.reRun}, which hand a command back to its handler thread and handle it again; neither decides
 * anything of its own). Reads the failure through {@link StoreFailures}.
 * <p>
 * One per bus, made from the stage plan's facts ({@link StagePlan.Facts#reRunsAllowed}); immutable, so any thread
 * may ask it (store threads decide, the handler thread skips in a re-run what may not run again).
 */
final class StoreRecovery {

    /** What becomes of a group whose attempt failed. */
    enum Next {
        /**
         * The commit failed without the database saying it rolled back: the group may be committed, so its commands
         * fail with the outcome unknown and are never appended again; the other groups are still tried.
         */
        FAIL_OUTCOME_UNKNOWN,
        /** As {@link #FAIL_OUTCOME_UNKNOWN}, and the store cannot be reached: every command not yet committed fails. */
        FAIL_OUTCOME_UNKNOWN_THEN_ALL,
        /**
         * No transaction could begin, or the store cannot be reached: the group's commands and every command not yet
         * committed fail with the failure (trying them apart would only fail again).
         */
        FAIL_ALL,
        /**
         * A subscriber refused a command after the group's first: the commands before it are decided first (it may
         * have been built on one of them that the store refuses in turn); then it leads a group of its own.
         */
        SPLIT_AT_CULPRIT,
        /**
         * A subscriber refused the group's first command: it fails alone, and its aggregate's generation is poisoned
         * before the rest of the group is tried (the commands that built on it are handled again, or fail).
         */
        FAIL_CULPRIT,
        /**
         * The group's one command was refused because another writer appended to its aggregate first: it is handled
         * again on the aggregate as stored and tried again, where it may run twice; else it fails alone.
         */
        HANDLE_AGAIN_ON_STORED,
        /** The group's one command fails with the failure its own append raised. */
        FAIL_ALONE,
        /** The group is split in halves, tried in ring order: the commands that fail on their own are isolated. */
        HALVE
    }

    /** False when the plan allows no re-runs: a publish stage beside the store may have handed events out. */
    private final boolean reRunsAllowed;

    /** @param reRunsAllowed the plan's fact: false when no command may ever be handled twice on this bus */
    StoreRecovery(boolean reRunsAllowed) {
        this.reRunsAllowed = reRunsAllowed;
    }

    /**
     * @param attempt how the group's attempt failed; not {@link StoreAttempt#STORED}
     * @param group   the commands of the attempt, in ring order
     * @return what becomes of the group; {@link Next#HANDLE_AGAIN_ON_STORED} is carried out only where
     *         {@link #mayHandleAgainOnStored} agrees, else the command fails alone
     */
    Next next(StoreAttempt attempt, List<CommandSlot> group) {
        if (attempt.stored()) {
            throw new IllegalArgumentException("Nothing to recover from: the group is stored");
        }
        Throwable failure = attempt.failure;
        if (attempt.end == StoreAttempt.End.COMMIT_FAILED && !StoreFailures.rolledBack(failure)) {
            return StoreFailures.unreachable(failure) ? Next.FAIL_OUTCOME_UNKNOWN_THEN_ALL : Next.FAIL_OUTCOME_UNKNOWN;
        }
        if (attempt.end == StoreAttempt.End.BEGIN_FAILED || StoreFailures.unreachable(failure)) {
            return Next.FAIL_ALL;
        }
        if (attempt.culprit != null) {
            int at = group.indexOf(attempt.culprit);
            if (at < 0) {
                throw new IllegalArgumentException("The culprit " + attempt.culprit + " is not of the group");
            }
            return at > 0 ? Next.SPLIT_AT_CULPRIT : Next.FAIL_CULPRIT;
        }
        if (group.size() == 1) {
            return StoreFailures.sequenceConflict(failure) ? Next.HANDLE_AGAIN_ON_STORED : Next.FAIL_ALONE;
        }
        return Next.HALVE;
    }

    /**
     * Whether a command built on a state of its aggregate that was given up (an earlier command's events were
     * refused) is handled again on the aggregate as stored, rather than failed with "handled on top of events ...
     * that failed to be stored". Never where the plan allows no re-runs; never a command whose run had effects that
     * a second run would repeat: it ran another aggregate's command in place, ran whole (its handler sent commands,
     * which went out already), marked its Unit of Work {@link RunOnce}, ran prepare-commit handlers (a deadline
     * scheduled, say), or was run again {@link CommandSlot#MOST_RE_RUNS} times already.
     *
     * @param slot the command, after its handler ran (store thread), or met in a re-run (its handler thread)
     * @return true when it may run again
     */
    boolean mayRunAgain(CommandSlot slot) {
        return reRunsAllowed && slot.mayBeReRun();
    }

    /**
     * Whether the one command of a group the store refused because another writer appended to its aggregate first
     * ({@link Next#HANDLE_AGAIN_ON_STORED}) is handled again on the aggregate as stored, as a retry on
     * {@code SimpleCommandBus} would: where it {@linkplain #mayRunAgain may run again}, runs on an aggregate, and does
     * not create it (a second creation of one aggregate stays refused).
     *
     * @param slot the refused command (store thread)
     * @return true when it is handled again
     */
    boolean mayHandleAgainOnStored(CommandSlot slot) {
        return slot.holder != null && mayRunAgain(slot) && !createsItsAggregate(slot);
    }

    /** @return true when the command's events start its aggregate's stream (sequence number 0), or it has none */
    private static boolean createsItsAggregate(CommandSlot slot) {
        String identifier = slot.holder.identifier();
        for (int i = 0; i < slot.events.size(); i++) {
            if (slot.events.get(i) instanceof DomainEventMessage<?> event
                    && identifier.equals(event.getAggregateIdentifier())) {
                return event.getSequenceNumber() == 0;
            }
        }
        return true; // none of its own: nothing to gain from a new run
    }
}
