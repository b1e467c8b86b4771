package io.github.ringbus;

/**
 * How the pipeline's stage threads wait for work. Each stage is one thread; a busy-waiting stage holds a core.
 * <p>
 * The default is chosen by measurement on a 2-core machine (see docs/benchmarks.md): with more stage threads than
 * cores, strategies that spin starve the threads doing the work.
 */
public enum WaitStrategyChoice {

    /**
     * The Disruptor's {@code BlockingWaitStrategy}: a stage waiting for a command to be handed over blocks on a lock
     * and condition (no CPU when idle, a wake-up on every publication), but a stage waiting for an <em>earlier stage</em>
     * busy-spins. On few cores that spin starves the stage it waits for: with 8 dispatchers on 2 cores and a preload
     * stage reading aggregates cold from PostgreSQL, ringbus ran at 400-550 commands/s with it against about 7,000 with
     * {@link #ADAPTIVE} (seen in the seeded torture). Prefer {@link #ADAPTIVE}, which also uses no CPU when idle.
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
