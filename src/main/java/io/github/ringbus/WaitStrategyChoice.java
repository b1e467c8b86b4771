package io.github.ringbus;

/**
 * How the pipeline's stage threads wait for work. Each stage is one thread; a busy-waiting stage holds a core.
 * <p>
 * The default is chosen by measurement on a 2-core machine (see docs/benchmarks.md): with more stage threads than
 * cores, strategies that spin starve the threads doing the work.
 */
public enum WaitStrategyChoice {

    /**
     * No CPU while waiting: a stage thread blocks on a lock and condition as soon as no command is coming (a
     * hand-over wakes it), and waits for an earlier stage that is still at work by parking for the shortest time the
     * OS gives (about 50 µs on Linux). Not the Disruptor's {@code BlockingWaitStrategy}, which busy-spins on earlier
     * stages: on 2 cores that spin took the core from the stage it waited for (the seeded torture ran at 400-550
     * commands/s with it, against about 7,000 with {@link #ADAPTIVE}). Costs a wake-up on most hand-overs after a
     * pause and up to ~50 µs per stage when a stage waits for another (then up to 250 µs once it has waited a millisecond, so that a slow handler leaves the stages behind it nearly idle); {@link #ADAPTIVE} is faster under load.
     */
    BLOCKING,

    /**
     * Spin briefly, then yield, then park for a short time: no lock on the hand-over path, but every stage thread
     * wakes about 20,000 times a second while the bus is idle (more than half a core on 2 cores).
     */
    SLEEPING,

    /**
     * As {@link #SLEEPING} while commands flow, but yielding for up to 200 µs before it parks (so that a single
     * caller's {@code sendAndWait} rarely finds a stage parked); a stage thread that has had nothing to do for a millisecond blocks
     * until the next command is handed over: no CPU when idle, and a hand-over pays for a wake-up only after such a
     * pause.
     */
    ADAPTIVE,

    /** Spin, then yield the core to other threads. Good when there is a core per stage thread. */
    YIELDING,

    /** Spin without pause. Lowest latency, but only when every stage thread has a core of its own. */
    BUSY_SPIN
}
