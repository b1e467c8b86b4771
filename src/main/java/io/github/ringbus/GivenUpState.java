package io.github.ringbus;

/**
 * The one rule for a command built on a state of its aggregate that was given up (an earlier command's events were
 * refused, or their commit had an unknown outcome): it is handled again on the aggregate as stored where the policy
 * lets it ({@link StoreRecovery#mayRunAgain}), once every command before it in ring order is decided (so that the
 * store holds every earlier command of the aggregate that will ever be stored); otherwise it fails as built on that
 * state ({@link RefusedBatch#failPoisoned}). Asked by the store stage as commands reach it and by a refused batch's
 * carry-out as it meets them; it answers and never calls back, so the caller decides the commands before one that
 * may run again itself. One per store thread, used by it alone. Tests: {@code StoreRecoveryTest},
 * {@code behaviour.RefusedAppendNeighboursTest}, {@code behaviour.StoreFailureTest}.
 */
final class GivenUpState {

    private final StoreRecovery recovery;
    private final ReRuns reRuns;

    /**
     * @param recovery the policy: which commands may run again
     * @param reRuns   hands a command back to its handler thread to be handled again
     */
    GivenUpState(StoreRecovery recovery, ReRuns reRuns) {
        this.recovery = recovery;
        this.reRuns = reRuns;
    }

    /** What becomes of a command the store thread reached, by the rule. */
    enum Verdict {
        /** Not built on a given-up state: stored (or passed) as it is. */
        STANDS,
        /** Built on a given-up state and may not run again: it fails as built on that state. */
        MUST_FAIL,
        /**
         * Built on a given-up state and the policy lets it run again: once every command before it in ring order is
         * decided, {@link #ranAgain} has it handled again.
         */
        MAY_RUN_AGAIN
    }

    /**
     * @param slot a command the store thread reached
     * @return what becomes of it; allocates only for a command built on a given-up state (the policy's facts)
     */
    Verdict verdict(CommandSlot slot) {
        if (!isBuiltOn(slot)) {
            return Verdict.STANDS;
        }
        return recovery.mayRunAgain(StoreRecovery.Command.of(slot)) ? Verdict.MAY_RUN_AGAIN : Verdict.MUST_FAIL;
    }

    /**
     * Has a command whose verdict is {@link Verdict#MAY_RUN_AGAIN} handled again by its handler thread; call only
     * once every command before it in ring order is decided, holding no transaction.
     *
     * @return true when it ran again (its new run is to be stored), false when it must fail as built on that state
     */
    boolean ranAgain(CommandSlot slot) {
        return reRuns.reRunFrom(slot);
    }

    /**
     * The rule where every command before {@code slot} in ring order is decided already (a refused batch's
     * carry-out): {@link #verdict}, and for one that may run again, {@link #ranAgain}.
     *
     * @return true when it must fail as built on a given-up state
     */
    boolean mustFailWithEarlierDecided(CommandSlot slot) {
        Verdict verdict = verdict(slot);
        return verdict == Verdict.MUST_FAIL || (verdict == Verdict.MAY_RUN_AGAIN && !ranAgain(slot));
    }

    /** @return true when the command was built on a state of an aggregate that was given up since it ran */
    static boolean isBuiltOn(CommandSlot slot) {
        return slot.builtOnGivenUpState() != null;
    }
}
