package io.github.ringbus;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * What one store thread's attempts came to, for the stage threads' times and the health checks: the thread, its
 * time in the store's transactions, since when its attempts have failed one after the other and the last failure,
 * and the commands it failed by second. The store thread writes it, once per attempt ({@link #attemptEnded}) and per
 * failed command; any thread reads it.
 * <p>
 * Threads: every field has one writer, the store thread; the readers see it through volatile fields (a plain add
 * the time in the store under a sequence lock, so that a reader sees the attempt in progress or its end, never both). No lock; nothing allocated on the store thread.
 */
final class StoreHealth {

    /**
     * How long an attempt may be in progress before the store counts as failing ({@link #failure}): a group's commit
     * takes milliseconds; a second is a pool waiting for a connection or a database that does not answer.
     */
    static final long STALLED_NANOS = TimeUnit.SECONDS.toNanos(1);

    /** The wall time the store thread spent in the store's transactions that ended, summed. */
    private volatile long endedNanos;
    /**
     * When the attempt in progress began ({@code System.nanoTime()}), or 0 between attempts: a reader counts an attempt
     * that has not ended yet too, so that a share of time taken over a window never puts a whole long attempt (a
     * connection wait of 30 s) into the window it ended in (a share above 1).
     */
    private volatile long attemptStartNanos;
    /**
     * Odd while the store thread moves an ended attempt from {@link #attemptStartNanos} into {@link #endedNanos}: a
     * reader that saw it change (or odd) reads again (a sequence lock; the writer never waits).
     */
    private volatile long version;
    /** The thread that runs the stage, set by it at its first attempt. */
    private volatile Thread runner;
    /**
     * When the attempts began to fail one after the other ({@code System.nanoTime()}), or 0 while the last attempt
     * stored (a volatile read per attempt, a write only when the state changes).
     */
    private volatile long failingSinceNanos;
    private volatile long lastFailedNanos;
    private volatile Throwable lastFailure;
    /** The commands the stage failed, by second. */
    private final MinuteCount failedCommands = new MinuteCount();

    /**
     * The store thread, before its attempt: it is the stage's runner from its first attempt on.
     *
     * @param startNanos when the attempt begins ({@code System.nanoTime()})
     */
    void attemptStarts(long startNanos) {
        if (runner == null) {
            runner = Thread.currentThread();
        }
        attemptStartNanos = startNanos == 0 ? 1 : startNanos;
    }

    /**
     * The store thread, after an attempt: adds its time and records whether it stored.
     *
     * @param startNanos when it began
     * @param endNanos   when it ended
     * @param attempt    how it ended; null when it ended with a ringbus bug (counted as failed, the failure unknown)
     * @return true when it stored
     */
    boolean attemptEnded(long startNanos, long endNanos, StoreAttempt attempt) {
        long v = version;
        version = v + 1;
        endedNanos += endNanos - startNanos; // one writer: this thread
        attemptStartNanos = 0;
        version = v + 2;
        if (attempt != null && attempt.stored()) {
            if (failingSinceNanos != 0) {
                failingSinceNanos = 0;
            }
            return true;
        }
        lastFailure = attempt == null ? null : attempt.failure;
        lastFailedNanos = endNanos;
        if (failingSinceNanos == 0) {
            failingSinceNanos = startNanos == 0 ? 1 : startNanos;
        }
        return false;
    }

    /** The store thread failed {@code commands} commands now (the failure path only). */
    void failed(long commands, long nowNanos) {
        failedCommands.add(commands, nowNanos);
    }

    /**
     * @param now {@code System.nanoTime()} now
     * @return how many commands the stage failed in the last minute (refused, built on refused events, or not stored
     *         because the store could not be reached); any thread
     */
    long failedInLastMinute(long now) {
        return failedCommands.lastMinute(now);
    }

    /**
     * @param now {@code System.nanoTime()} now
     * @return how the store is failing, or null while the last attempt stored (or none failed) and no attempt has
     *         been in progress for {@link #STALLED_NANOS} or more; any thread
     */
    StoreFailure failure(long now) {
        long since = failingSinceNanos;
        long attemptStart = attemptStartNanos;
        long inProgress = attemptStart == 0 ? 0 : now - attemptStart;
        boolean stalled = inProgress >= STALLED_NANOS;
        if (since == 0) {
            if (!stalled) {
                return null;
            }
            // Nothing failed yet, but nothing stores either: a pool waiting for a connection (30 s by default in
            // HikariCP) or a database that does not answer. Failing since the attempt began.
            return new StoreFailure(Duration.ofNanos(inProgress), Duration.ZERO,
                                    "an attempt has waited " + TimeUnit.NANOSECONDS.toMillis(inProgress) + " ms for "
                                            + "the store (for a connection, or for the database's answer)");
        }
        Throwable failure = lastFailure;
        Duration sinceLast = stalled ? Duration.ZERO : Duration.ofNanos(now - lastFailedNanos);
        return new StoreFailure(Duration.ofNanos(now - since), sinceLast,
                                failure == null ? "unknown" : failure.getClass().getName() + ": " + failure.getMessage());
    }

    /** @return the thread that runs the stage, or null before its first attempt */
    Thread runner() {
        return runner;
    }

    /**
     * @param now {@code System.nanoTime()}, read by the caller after the thread's other times
     * @return the wall time the stage's thread spent in the store's transactions until {@code now}, the attempt in
     *         progress included; any thread
     */
    long inStoreNanos(long now) {
        while (true) {
            long v = version;
            long ended = endedNanos;
            long start = attemptStartNanos;
            if ((v & 1) == 0 && v == version) {
                // No attempt ended during the reads: "start" is the attempt after those summed in "ended", or none.
                return start == 0 ? ended : ended + Math.max(0, now - start);
            }
            Thread.onSpinWait();
        }
    }
}
