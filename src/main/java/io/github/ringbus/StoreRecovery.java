package io.github.ringbus;

import java.util.List;

/**
 * The recovery policy of refused appends: after an attempt to store a group of commands failed ({@link StoreAttempt}),
 * what becomes of that group next ({@link #next}), and which commands are handled again: one built on a state of its
 * aggregate that the store refused ({@link #mayRunAgain}), or one the store refused because another writer appended
 * to its aggregate first ({@link #mayHandleAgainOnStored}). The Disruptor's {@code BatchRewindStrategy} is the model:
 * an outcome in, one action out; {@link RefusedBatch} carries it out, {@link ReRuns} and {@code HandleStage.reRun}
 * hand a command back to its handler thread, and none of them decides anything of its own. An implementation holds
 * every limit it applies ({@link IsolatingStoreRecovery}, ringbus's). Implementations are immutable: store threads and
 * handler threads ask them at once.
 */
interface StoreRecovery {

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

    /**
     * @param attempt how the group's attempt failed; not {@link StoreAttempt#STORED}
     * @param group   the commands of the attempt, in ring order
     * @return what becomes of the group; {@link Next#HANDLE_AGAIN_ON_STORED} is carried out only where
     *         {@link #mayHandleAgainOnStored} agrees, else the command fails alone
     */
    Next next(StoreAttempt attempt, List<CommandSlot> group);

    /**
     * @param slot a command built on a state of its aggregate that was given up, after its handler ran (store thread)
     *             or met in a re-run (its handler thread)
     * @return true when it is handled again on the aggregate as stored, false when it fails as built on that state
     */
    boolean mayRunAgain(CommandSlot slot);

    /**
     * @param slot the one command of a group refused because another writer appended to its aggregate first (store
     *             thread)
     * @return true when it is handled again on the aggregate as stored, false when it fails with the refusal
     */
    boolean mayHandleAgainOnStored(CommandSlot slot);
}
