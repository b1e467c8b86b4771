package io.github.ringbus;

import org.axonframework.eventhandling.DomainEventMessage;


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
        /**
         * The database refused the transaction for a conflict between transactions ({@link StoreFailures#transientConflict}:
         * a deadlock, a serialization failure) that the same group may not meet a moment later: it is tried again,
         * whole, after {@link #pauseBeforeTryingAgain}; the policy bounds how often in one failed batch.
         */
        TRY_AGAIN_AFTER_PAUSE,
        /** The group is split in halves, tried in ring order: the commands that fail on their own are isolated. */
        HALVE
    }

    /**
     * What a policy may know of one command: the facts its decisions read, taken from the command's slot when the
     * policy is asked (the failure path and re-runs only), so that a policy never reads the slot itself.
     *
     * @param runsWhole               it ran whole on its aggregate's thread, its own repository's transaction there
     * @param ranCommandsInPlace      it ran another aggregate's command in place
     * @param reRuns                  how many times it was run again already
     * @param preparedWithoutHandlers its Unit of Work ran no prepare-commit handlers of the application's
     * @param markedRunOnce           its Unit of Work is marked {@link RunOnce}: it sent a command, say
     * @param onAnAggregate           it runs on an aggregate the ring holds
     * @param createsAnAggregate      one of its events starts an aggregate's stream (sequence number 0), or none of
     *                                them is its own aggregate's
     */
    record Command(boolean runsWhole, boolean ranCommandsInPlace, int reRuns, boolean preparedWithoutHandlers,
                   boolean markedRunOnce, boolean onAnAggregate, boolean createsAnAggregate) {

        /** @return the facts of the command in the slot; allocates (the failure path and re-runs only) */
        static Command of(CommandSlot slot) {
            return new Command(slot.runsWhole, slot.ledger.ranCommandsInPlace(), slot.ledger.reRunCount(),
                               slot.unitOfWork.preparedWithoutHandlers(), RunOnce.isMarked(slot.unitOfWork),
                               slot.holder != null, slot.holder != null && createsAnAggregate(slot));
        }

        private static boolean createsAnAggregate(CommandSlot slot) {
            String identifier = slot.holder.identifier();
            boolean ownEvent = false;
            for (int i = 0; i < slot.events.size(); i++) {
                if (slot.events.get(i) instanceof DomainEventMessage<?> event) {
                    if (event.getSequenceNumber() == 0) {
                        return true;
                    }
                    ownEvent |= identifier != null && identifier.equals(event.getAggregateIdentifier());
                }
            }
            return !ownEvent; // none of its own: nothing to gain from a new run
        }
    }

    /**
     * @param attempt    how the group's attempt failed; not {@link StoreAttempt#STORED}
     * @param groupSize  how many commands the group has
     * @param culpritAt  where in the group (ring order) the command a subscriber refused is, or -1 when none was
     * @param triedAgainAfterPause how many times a group of this failed batch was tried again after a pause already
     *                   ({@link Next#TRY_AGAIN_AFTER_PAUSE})
     * @return what becomes of the group; {@link Next#HANDLE_AGAIN_ON_STORED} is carried out only where
     *         {@link #mayHandleAgainOnStored} agrees, else the command fails alone
     */
    Next next(StoreAttempt attempt, int groupSize, int culpritAt, int triedAgainAfterPause);

    /**
     * @param triedAgainAfterPause how many times a group of this failed batch was tried again after a pause already
     * @return how long the store thread waits before it tries a group again ({@link Next#TRY_AGAIN_AFTER_PAUSE}), in
     *         nanoseconds
     */
    long pauseBeforeTryingAgain(int triedAgainAfterPause);

    /**
     * @param command a command built on a state of its aggregate that was given up, after its handler ran (store
     *                thread) or met in a re-run (its handler thread)
     * @return true when it is handled again on the aggregate as stored, false when it fails as built on that state
     */
    boolean mayRunAgain(Command command);

    /**
     * @param command the one command of a group refused because another writer appended to its aggregate first
     *                (store thread)
     * @return true when it is handled again on the aggregate as stored, false when it fails with the refusal
     */
    boolean mayHandleAgainOnStored(Command command);
}
