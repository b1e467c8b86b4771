package io.github.ringbus;

/**
 * The one rule for a command built on a state of its aggregate that was given up (an earlier command's events were
 * refused, or their commit had an unknown outcome): it is handled again on the aggregate as stored where the policy
 * lets it ({@link StoreRecovery#mayRunAgain}), once every command before it in ring order is decided (so that the
 * store holds every earlier command of the aggregate that will ever be stored); otherwise it fails as built on that
 * state ({@link RefusedBatch#failPoisoned}). Asked by the store stage as commands reach it and by a refused batch's
 * carry-out as it meets them; one per store thread, used by it alone. Tests: {@code StoreRecoveryTest},
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

    /**
     * @param slot          a command the store thread reached
     * @param decideEarlier stores or fails the commands before it that are still in hand (nothing when every one is
     *                      decided); run only when the command is to run again
     * @return true when the command is built on a given-up state and did not run again: it must fail, after the
     * commands before it that its failure would give up with it are decided
     */
    boolean mustFail(CommandSlot slot, Runnable decideEarlier) {
        if (!isBuiltOn(slot)) {
            return false;
        }
        if (!recovery.mayRunAgain(StoreRecovery.Command.of(slot))) {
            return true; // and the commands in hand are not cut short for nothing
        }
        decideEarlier.run();
        return !reRuns.reRunFrom(slot);
    }

    /** @return true when the command was built on a state of an aggregate that was given up since it ran */
    static boolean isBuiltOn(CommandSlot slot) {
        return slot.builtOnGivenUpState() != null;
    }
}
