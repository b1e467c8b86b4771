package io.github.ringbus;

/**
 * What one of a ring's stage threads has spent since it started, read at one moment
 * ({@link RingCommandBus#stageThreadTimes()}): the CPU time it used, and, for a thread that stores, the wall time it
 * spent inside the store's transactions (appending and committing, which is mostly waiting for the server on a
 * database). Over an interval, {@code cpuNanos} over the interval's length is the thread's busy share of a core, and
 * {@code inStoreNanos} over it the share of its time the store took: a store thread busy 20 % of a core and 90 % in the
 * store waits on the database; a handler thread busy 95 % limits the ring by itself.
 *
 * @param thread       the thread's name ({@code <prefix>-<stage>}, e.g. {@code ringbus-store-complete})
 * @param stores       true when the thread appends events to the store (a store or store-complete stage)
 * @param cpuNanos     the CPU time the thread used, or -1 where the JVM cannot measure it (or the thread has not
 *                     started, or has ended)
 * @param inStoreNanos the wall time the thread spent in the store's transactions, the one in progress included (0 for
 *                     a thread that does not store)
 * @param runningNanos the wall time since the thread began to run, read just after the two times above (0 before it
 *                     started): the length of the interval that {@code cpuNanos} and {@code inStoreNanos} cover, so
 *                     that a share is taken over one clock's readings, never more than the wall time it was spent in
 */
public record StageThreadTimes(String thread, boolean stores, long cpuNanos, long inStoreNanos, long runningNanos) {
}
