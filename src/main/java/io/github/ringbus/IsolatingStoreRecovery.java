package io.github.ringbus;



/**
 * ringbus's recovery policy of refused appends, the one file to change it in ({@code StoreRecoveryTest} is its table):
 * try a group the database refused for a conflict between transactions again after a pause, a few times
 * ({@link #MOST_TRIES_AFTER_PAUSE}); isolate the commands the store refuses by halving the group, fail each with its
 * own failure, and handle again, on
 * the aggregate as stored, the commands built on a refused state and those refused for another writer's append, as
 * long as nothing of their run reached beyond their events and they ran again fewer than {@link #MOST_RE_RUNS} times.
 * Holds every limit it applies: the most re-runs, what a run may have done to run again, and whether the plan allows
 * re-runs at all ({@link StagePlan.Facts#reRunsAllowed}). Reads the failure through {@link StoreFailures}.
 * <p>
 * One per bus; immutable, so any thread may ask it (store threads decide, the handler thread skips in a re-run what
 * may not run again).
 * <p>
 * Tests: {@code StoreRecoveryTest}.
 */
final class IsolatingStoreRecovery implements StoreRecovery {

    /**
     * How many times one command is run again at most ({@link ReRuns}): a bound on the work that a run of refused
     * appends of one aggregate can cause.
     */
    static final int MOST_RE_RUNS = 16;

    /**
     * How many times the groups of one failed batch are tried again after a pause at most, when the database refused
     * them for a conflict between transactions (a deadlock, a serialization failure): then they are isolated as any
     * failed append, and a command alone fails with the database's refusal. Three pauses of 1, 4 and 16 ms hold the
     * store thread 21 ms at most per batch.
     */
    static final int MOST_TRIES_AFTER_PAUSE = 3;
    /** The first pause before a group is tried again; each next one is four times longer. */
    static final long FIRST_PAUSE_NANOS = 1_000_000;

    /** False when the plan allows no re-runs: a publish stage beside the store may have handed events out. */
    private final boolean reRunsAllowed;

    /** @param reRunsAllowed the plan's fact: false when no command may ever be handled twice on this bus */
    IsolatingStoreRecovery(boolean reRunsAllowed) {
        this.reRunsAllowed = reRunsAllowed;
    }

    /**
     * @param attempt   how the group's attempt failed; not {@link StoreAttempt#STORED}
     * @param groupSize how many commands the group has
     * @param culpritAt where in the group the command a subscriber refused is, or -1
     * @return what becomes of the group; {@link Next#HANDLE_AGAIN_ON_STORED} is carried out only where
     *         {@link #mayHandleAgainOnStored} agrees, else the command fails alone
     */
    @Override
    public Next next(StoreAttempt attempt, int groupSize, int culpritAt, int triedAgainAfterPause) {
        if (attempt.stored()) {
            throw new IllegalArgumentException("Nothing to recover from: the group is stored");
        }
        if (triedAgainAfterPause < 0) {
            throw new IllegalArgumentException("A group cannot have been tried again " + triedAgainAfterPause + " times");
        }
        Throwable failure = attempt.failure;
        if (attempt.end == StoreAttempt.End.COMMIT_FAILED && !StoreFailures.rolledBack(failure)) {
            return StoreFailures.unreachable(failure) ? Next.FAIL_OUTCOME_UNKNOWN_THEN_ALL : Next.FAIL_OUTCOME_UNKNOWN;
        }
        if (attempt.end == StoreAttempt.End.BEGIN_FAILED || StoreFailures.unreachable(failure)) {
            return Next.FAIL_ALL;
        }
        if (StoreFailures.transientConflict(failure) && triedAgainAfterPause < MOST_TRIES_AFTER_PAUSE) {
            // Also when a subscriber threw it: its write in the store's transaction met another transaction's.
            return Next.TRY_AGAIN_AFTER_PAUSE;
        }
        if (attempt.culprit != null) {
            if (culpritAt < 0 || culpritAt >= groupSize) {
                throw new IllegalArgumentException("The culprit " + attempt.culprit + " is not of the group");
            }
            return culpritAt > 0 ? Next.SPLIT_AT_CULPRIT : Next.FAIL_CULPRIT;
        }
        if (groupSize == 1) {
            return StoreFailures.sequenceConflict(failure) ? Next.HANDLE_AGAIN_ON_STORED : Next.FAIL_ALONE;
        }
        return Next.HALVE;
    }

    /** 1, 4, 16 ms: long enough for the other transaction of a deadlock to finish, short beside a pool's timeout. */
    @Override
    public long pauseBeforeTryingAgain(int triedAgainAfterPause) {
        return FIRST_PAUSE_NANOS << (2 * Math.min(triedAgainAfterPause, MOST_TRIES_AFTER_PAUSE));
    }

    /**
     * Whether a command built on a state of its aggregate that was given up (an earlier command's events were
     * refused) is handled again on the aggregate as stored, rather than failed with "handled on top of events ...
     * that failed to be stored". Never where the plan allows no re-runs; never a command whose run had effects that
     * a second run would repeat: it ran another aggregate's command in place, ran whole (its handler sent commands,
     * which went out already), marked its Unit of Work {@link RunOnce}, ran prepare-commit handlers (a deadline
     * scheduled, say), or was run again {@link #MOST_RE_RUNS} times already.
     *
     * @param command the command's facts, after its handler ran (store thread), or met in a re-run (its handler
     *                thread)
     * @return true when it may run again
     */
    @Override
    public boolean mayRunAgain(Command command) {
        return reRunsAllowed && !command.runsWhole() && !command.ranCommandsInPlace()
                && command.reRuns() < MOST_RE_RUNS
                && command.preparedWithoutHandlers() && !command.markedRunOnce();
    }

    /**
     * Whether the one command of a group the store refused because another writer appended to its aggregate first
     * ({@link Next#HANDLE_AGAIN_ON_STORED}) is handled again on the aggregate as stored, as a retry on
     * {@code SimpleCommandBus} would: where it {@linkplain #mayRunAgain may run again}, runs on an aggregate, and does
     * not create one (a second creation of one aggregate stays refused, and is the command's own doing, not another
     * writer's append).
     *
     * @param command the refused command's facts (store thread)
     * @return true when it is handled again
     */
    @Override
    public boolean mayHandleAgainOnStored(Command command) {
        return command.onAnAggregate() && mayRunAgain(command) && !command.createsAnAggregate();
    }
}
