package io.github.ringbus.benchmarks.latency;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import io.github.ringbus.benchmarks.DepositBatch;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.concurrent.locks.LockSupport;
import org.HdrHistogram.ConcurrentHistogram;
import org.HdrHistogram.Histogram;
import org.axonframework.commandhandling.CommandBus;

/**
 * Sends Deposit commands from the calling thread on a fixed schedule and records, for each command, the
 * time from when it was due to be sent to when its callback fired. Measuring from the due time rather than
 * from the actual send charges a bus for holding the sender up (no coordinated omission).
 */
final class PacedDispatcher {

    /** How long before a due time the sender stops parking and spins, since parking overshoots. */
    private static final long SPIN_NANOS = TimeUnit.MICROSECONDS.toNanos(100);
    private static final long DRAIN_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final CommandBus commandBus;
    private final double commandsPerSecond;
    private final DepositBatch deposits = new DepositBatch(0);

    PacedDispatcher(CommandBus commandBus, double commandsPerSecond) {
        this.commandBus = commandBus;
        this.commandsPerSecond = commandsPerSecond;
    }

    /**
     * Sends commands at the offered rate for {@code duration}, waits for all of them to complete, and
     * returns their latencies in nanoseconds.
     *
     * @throws IllegalStateException if a command failed or not all completed within a minute of the last send
     */
    Histogram run(Duration duration) {
        Histogram latencies = new ConcurrentHistogram(3);
        AtomicInteger outstanding = new AtomicInteger();
        LongAdder failures = new LongAdder();
        AtomicReference<Throwable> firstFailure = new AtomicReference<>();

        double intervalNanos = 1e9 / commandsPerSecond;
        long count = (long) (duration.toNanos() / intervalNanos);
        long start = System.nanoTime();
        for (long i = 0; i < count; i++) {
            long due = start + (long) (i * intervalNanos);
            waitUntil(due);
            outstanding.incrementAndGet();
            commandBus.dispatch(asCommandMessage(deposits.deposit(i)), (command, result) -> {
                latencies.recordValue(System.nanoTime() - due);
                if (result.isExceptional()) {
                    failures.increment();
                    firstFailure.compareAndSet(null, result.exceptionResult());
                }
                outstanding.decrementAndGet();
            });
        }
        awaitNone(outstanding);
        if (failures.sum() > 0) {
            throw new IllegalStateException(failures.sum() + " commands failed; the first with: "
                                            + firstFailure.get(), firstFailure.get());
        }
        return latencies;
    }

    private static void waitUntil(long due) {
        long left;
        while ((left = due - System.nanoTime()) > 0) {
            if (left > SPIN_NANOS) {
                LockSupport.parkNanos(left - SPIN_NANOS);
            } else {
                Thread.onSpinWait();
            }
        }
    }

    private static void awaitNone(AtomicInteger outstanding) {
        long deadline = System.nanoTime() + DRAIN_TIMEOUT_NANOS;
        while (outstanding.get() > 0) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(outstanding.get() + " commands did not complete within "
                                                + TimeUnit.NANOSECONDS.toSeconds(DRAIN_TIMEOUT_NANOS) + " s");
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
        }
    }
}
