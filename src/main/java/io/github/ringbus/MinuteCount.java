package io.github.ringbus;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;

/**
 * A count of events over the last minute, in 60 buckets of one second: for health checks (the commands a store thread
 * failed in the last minute). Nothing on the common path: {@link #add} is called only where something failed.
 * <p>
 * One writer (its store thread) adds; any thread reads. A reader may miss what is added while it sums, or count a
 * bucket the writer is resetting as it was: the figure is exact to within the second being written.
 */
final class MinuteCount {

    private static final int SECONDS = 60;

    /** Per bucket, the second (of {@code System.nanoTime()}) it counts; written by the writer only. */
    private final AtomicLongArray seconds = new AtomicLongArray(SECONDS);
    /** Per bucket, how many were added in that second; written by the writer only. */
    private final AtomicLongArray counts = new AtomicLongArray(SECONDS);

    MinuteCount() {
        for (int i = 0; i < SECONDS; i++) {
            seconds.set(i, Long.MIN_VALUE);
        }
    }

    /** Adds {@code n} now; the writer's thread only. */
    void add(long n, long nowNanos) {
        long second = TimeUnit.NANOSECONDS.toSeconds(nowNanos);
        int bucket = (int) Math.floorMod(second, SECONDS);
        if (seconds.get(bucket) != second) {
            counts.set(bucket, 0);
            seconds.set(bucket, second);
        }
        counts.set(bucket, counts.get(bucket) + n);
    }

    /** @return what was added in the 60 s up to {@code nowNanos}; any thread */
    long lastMinute(long nowNanos) {
        long second = TimeUnit.NANOSECONDS.toSeconds(nowNanos);
        long sum = 0;
        for (int i = 0; i < SECONDS; i++) {
            long at = seconds.get(i);
            if (at > second - SECONDS && at <= second) {
                sum += counts.get(i);
            }
        }
        return sum;
    }
}
