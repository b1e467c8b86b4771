package io.github.ringbus;

/**
 * What one attempt of the store stage to store a group of commands in one transaction came to: stored, or where it
 * failed, with what, and (for a subscriber's refusal) whose command. The one value the store stage's recovery reads
 * ({@link StoreRecovery}); immutable. A stored attempt is the constant {@link #STORED}: only a failure allocates one.
 * <p>
 * Tests: {@code StoreRecoveryTest}, {@code StoreStageTest}.
 */
final class StoreAttempt {

    /** Where an attempt ended. */
    enum End {
        /** Committed: every command of the group is stored. */
        STORED,
        /** No transaction could begin: nothing was tried. */
        BEGIN_FAILED,
        /** The append (or, on a plain event store, its publication before the subscribers) failed; rolled back. */
        APPEND_FAILED,
        /** A subscriber threw for the {@link #culprit}'s events ({@code IN_TRANSACTION}); rolled back. */
        REFUSED_BY_SUBSCRIBER,
        /**
         * Nothing appended: the {@link #culprit}'s events would be committed too long after their timestamp
         * ({@link CommitDeadline}); rolled back.
         */
        TOO_LATE,
        /** The commit failed (or, on a plain event store, what came after its subscribers): committed or not. */
        COMMIT_FAILED
    }

    static final StoreAttempt STORED = new StoreAttempt(End.STORED, null, null);

    /** Where it ended. */
    final End end;
    /** What it failed with; null when stored. */
    final Throwable failure;
    /** The command whose subscriber threw ({@link End#REFUSED_BY_SUBSCRIBER}) or that came too late, else null. */
    final CommandSlot culprit;

    private StoreAttempt(End end, Throwable failure, CommandSlot culprit) {
        this.end = end;
        this.failure = failure;
        this.culprit = culprit;
    }

    static StoreAttempt failed(End end, Throwable failure) {
        if (end == End.STORED || end == End.REFUSED_BY_SUBSCRIBER || end == End.TOO_LATE || failure == null) {
            throw new IllegalArgumentException("A failure in " + end + " needs its exception (and no culprit)");
        }
        return new StoreAttempt(end, failure, null);
    }

    static StoreAttempt refusedBySubscriber(CommandSlot culprit, Throwable failure) {
        if (culprit == null || failure == null) {
            throw new IllegalArgumentException("A subscriber's refusal needs its command and its exception");
        }
        return new StoreAttempt(End.REFUSED_BY_SUBSCRIBER, failure, culprit);
    }

    static StoreAttempt tooLate(CommandSlot culprit, Throwable failure) {
        if (culprit == null || failure == null) {
            throw new IllegalArgumentException("A command too late to commit needs its command and its exception");
        }
        return new StoreAttempt(End.TOO_LATE, failure, culprit);
    }

    boolean stored() {
        return end == End.STORED;
    }

    @Override
    public String toString() {
        return end + (failure == null ? "" : " (" + failure + ")");
    }
}
