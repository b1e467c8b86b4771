package io.github.ringbus;

import java.util.List;

/**
 * The store stage's recovery policy, in one place: after an attempt to store a group of commands failed
 * ({@link StoreAttempt}), decides what becomes of that group next. The Disruptor's {@code BatchRewindStrategy} is the
 * model: an outcome in, one action out, the caller carries it out ({@code StoreStage.recover}, which tries the groups
 * in ring order, each in a fresh transaction, and has commands handled again through {@link ReRuns}). Reads the
 * failure through {@link StoreFailures}; stateless.
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

    private StoreRecovery() {
    }

    /**
     * @param attempt how the group's attempt failed; not {@link StoreAttempt#STORED}
     * @param group   the commands of the attempt, in ring order
     * @return what becomes of the group
     */
    static Next next(StoreAttempt attempt, List<CommandSlot> group) {
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
}
