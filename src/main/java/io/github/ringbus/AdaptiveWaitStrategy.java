package io.github.ringbus;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.Sequence;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.WaitStrategy;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

/**
 * {@link WaitStrategyChoice#ADAPTIVE}: while commands flow, a stage thread waits much as the Disruptor's
 * {@code SleepingWaitStrategy} does (spin, then yield for up to {@link #YIELD_NANOS}, then park for the shortest time
 * the OS gives, about 50 µs on Linux), which measured fastest on small machines; once the ring has stayed empty for a stage for
 * {@link #IDLE_BEFORE_BLOCKING} it blocks until a dispatcher hands a command over, as the Disruptor's
 * {@code LiteBlockingWaitStrategy} does, so that a started bus with no commands uses no CPU.
 * <p>
 * "Empty" means the ring's cursor (the highest sequence a dispatcher claimed) is below the sequence the stage waits
 * for: nothing is coming. A stage waiting for an earlier stage that is still at work keeps sleeping: that wait is
 * short. Under load a stage rarely sees an empty ring for a millisecond, so dispatchers rarely pay for a wake-up: a
 * hand-over costs them one volatile read of {@link #signalNeeded} unless a stage thread is blocked.
 * <p>
 * The hand-off (a blocking stage thread against a dispatcher handing a command over) is Dekker's: the stage thread
 * writes {@link #signalNeeded} before it reads the cursor, the dispatcher advances the cursor (when it claims) before
 * it reads the flag (when it hands over), both volatile, so either the stage thread sees the cursor moved and does
 * not block, or the dispatcher sees the flag and wakes it; the stage thread holds the monitor from its check until it
 * waits, so the wake-up cannot come in between. {@code AdaptiveWaitStrategyStress} (jcstress) checks it.
 */
final class AdaptiveWaitStrategy implements WaitStrategy {

    private static final Logger logger = LoggerFactory.getLogger(AdaptiveWaitStrategy.class);

    /** How long the ring must stay empty for a stage before its thread blocks. */
    static final long IDLE_BEFORE_BLOCKING = TimeUnit.MILLISECONDS.toNanos(1);
    private static final int SPINS = 100;
    /**
     * How long a waiting stage thread keeps yielding before it parks. A park costs about 50 µs to come back from
     * (the OS's timer slack): a {@code sendAndWait} round trip from one thread leaves each stage idle while the
     * caller wakes up and sends its next command, and with 100 yields (as {@code SleepingWaitStrategy}) one round
     * trip in ten paid one or two parks (p90 70-115 µs); yielding for up to 200 µs took its p99 from 125 µs to 37 µs
     * with no loss of throughput (docs/benchmarks.md, "sendAndWait round trip"). Yielding gives the core to any
     * other runnable thread, so under load it costs the dispatchers nothing.
     */
    static final long YIELD_NANOS = TimeUnit.MICROSECONDS.toNanos(200);
    /** As {@code SleepingWaitStrategy}: the shortest park; the OS's timer slack makes it about 50 µs on Linux. */
    private static final long PARK_NANOS = 100;
    /**
     * With {@link WaitStrategyChoice#BLOCKING}, how long a stage thread waits for an earlier stage at work (a handler
     * that takes its time) with the shortest park before its parks grow: each wake-up from a 50 µs park costs about
     * 10 µs of CPU on a 2-vCPU machine, so a stage that waited on at that pace used a fifth of a core per waiting
     * thread (three of them behind one slow handler: more than half a core of the two).
     */
    static final long BUSY_BEFORE_LONGER_PARKS = TimeUnit.MILLISECONDS.toNanos(1);
    /**
     * The parks of a long wait for an earlier stage: doubling from the shortest to 250 µs (a wake-up's CPU then
     * about 4 % of a core; the earlier stage's end is seen at most 250 µs late, after it took more than a millisecond).
     */
    private static final Backoff BEHIND_A_BUSY_STAGE = new Backoff(PARK_NANOS, TimeUnit.MICROSECONDS.toNanos(250));

    private final long idleBeforeBlockingNanos;
    /** How long a wait behind an earlier stage at work parks briefly before the parks grow; never, for ADAPTIVE. */
    private final long busyBeforeLongerParksNanos;
    private final long yieldNanos;
    private final Object mutex = new Object();
    /** True once an interrupt of a blocked stage thread was logged. */
    private final AtomicBoolean toldOfInterrupt = new AtomicBoolean();
    /** Set by a stage thread about to block; read by every hand-over, cleared by the one that wakes it. */
    private final AtomicBoolean signalNeeded = new AtomicBoolean();

    AdaptiveWaitStrategy() {
        this(IDLE_BEFORE_BLOCKING);
    }

    /**
     * @param idleBeforeBlockingNanos how long the ring must stay empty for a stage before its thread blocks
     */
    AdaptiveWaitStrategy(long idleBeforeBlockingNanos) {
        this(idleBeforeBlockingNanos, YIELD_NANOS);
    }

    private AdaptiveWaitStrategy(long idleBeforeBlockingNanos, long yieldNanos) {
        this.idleBeforeBlockingNanos = idleBeforeBlockingNanos;
        this.yieldNanos = yieldNanos;
        // BLOCKING's choice: little CPU before latency. ADAPTIVE keeps its 50 µs parks (an A/B on 2 cores could not
        // tell whether longer parks cost it throughput on PostgreSQL; docs/benchmarks.md).
        this.busyBeforeLongerParksNanos = yieldNanos == 0 ? BUSY_BEFORE_LONGER_PARKS : Long.MAX_VALUE;
    }

    /**
     * {@link WaitStrategyChoice#BLOCKING}: the same waits with neither the yielding nor the idle millisecond. A stage
     * thread blocks as soon as no command is coming, and waits for an earlier stage at work by parking (about 50 µs
     * at a time, up to 250 µs once it has waited a millisecond), not by spinning as the Disruptor's
     * {@code BlockingWaitStrategy} does, which on few cores takes the
     * core from the very stage it waits for.
     */
    static AdaptiveWaitStrategy blocking() {
        return new AdaptiveWaitStrategy(0, 0);
    }

    /**
     * Never throws {@link InterruptedException}: stage threads are not stopped by interrupts (the Disruptor alerts
     * them), and an interrupt that reached one (set from outside, or left by user code the stage ran) must neither
     * end the wait early nor reach the Disruptor's processor, which would take it for a failure of the next slot and
     * skip that slot. A wait interrupted while blocked clears the flag and goes on waiting; one interrupted while
     * parked returns from the park at once, and blocks within {@link #IDLE_BEFORE_BLOCKING}, where the flag is
     * cleared.
     */
    @Override
    public long waitFor(long sequence, Sequence cursor, Sequence dependentSequence, SequenceBarrier barrier)
            throws AlertException {
        long available;
        int attempt = 0;
        long emptySince = 0;
        long yieldingSince = 0;
        long busySince = 0;
        int busyParks = 0;
        boolean empty = false;
        while ((available = dependentSequence.get()) < sequence) {
            barrier.checkAlert();
            if (attempt < SPINS) {
                Thread.onSpinWait();
                attempt++;
            } else if (attempt == SPINS) {
                yieldingSince = System.nanoTime();
                Thread.yield();
                attempt++;
            } else if (System.nanoTime() - yieldingSince < yieldNanos) {
                Thread.yield();
                attempt++;
            } else if (cursor.get() >= sequence) {
                // An earlier stage is still at work on it: usually a short wait; a long one parks longer and longer.
                // The cursor never moves back: once past the sequence this branch is taken until the wait ends.
                if (busySince == 0) {
                    busySince = System.nanoTime();
                }
                if (System.nanoTime() - busySince < busyBeforeLongerParksNanos) {
                    LockSupport.parkNanos(PARK_NANOS);
                } else {
                    BEHIND_A_BUSY_STAGE.idle(busyParks++);
                }
            } else if (!empty) {
                empty = true;
                emptySince = System.nanoTime();
                LockSupport.parkNanos(PARK_NANOS);
            } else if (System.nanoTime() - emptySince < idleBeforeBlockingNanos) {
                LockSupport.parkNanos(PARK_NANOS);
            } else {
                blockUntilClaimed(sequence, cursor, barrier);
                empty = false;
                attempt = 0;
            }
        }
        return available;
    }

    /**
     * Blocks until the cursor reaches the sequence, or the barrier is alerted; an interrupt clears the thread's flag
     * and the wait goes on. Package-private for its jcstress test.
     */
    void blockUntilClaimed(long sequence, Sequence cursor, SequenceBarrier barrier) throws AlertException {
        synchronized (mutex) {
            do {
                signalNeeded.set(true);
                if (cursor.get() >= sequence) {
                    return;
                }
                barrier.checkAlert();
                try {
                    mutex.wait();
                } catch (InterruptedException interrupt) {
                    // The flag is cleared; nothing in ringbus interrupts a stage thread, so go on waiting.
                    interruptedWhileBlocked();
                }
            } while (cursor.get() < sequence);
        }
    }

    private void interruptedWhileBlocked() {
        if (toldOfInterrupt.compareAndSet(false, true)) {
            logger.warn("ringbus stage thread [{}] was interrupted while it waited for commands; the interrupt is "
                                + "ignored (stage threads stop when the bus shuts down, not on interrupts). Logged "
                                + "once per bus.", Thread.currentThread().getName());
        }
    }

    @Override
    public void signalAllWhenBlocking() {
        // Called on every hand-over: a plain volatile read unless a stage thread is blocked.
        if (signalNeeded.get() && signalNeeded.getAndSet(false)) {
            synchronized (mutex) {
                mutex.notifyAll();
            }
        }
    }
}
