package io.github.ringbus.benchmarks;

import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;

/**
 * The callback for one dispatching thread's batch of commands, reused from batch to batch: it counts the
 * results down, lets the dispatching thread park until the last one has arrived, and keeps the first
 * failure so that {@link #await()} can fail loudly.
 *
 * <p>Use: {@link #expect(int)}, dispatch that many commands with this callback, {@link #await()}.
 */
public final class BatchCompletion implements CommandCallback<Object, Object> {

    private final long timeoutNanos;
    private final AtomicInteger remaining = new AtomicInteger();
    private final AtomicInteger failures = new AtomicInteger();
    private volatile Throwable firstFailure;
    private volatile Thread waiter;

    /** A completion whose {@link #await()} gives up after {@code timeoutNanos}. */
    public BatchCompletion(long timeoutNanos) {
        this.timeoutNanos = timeoutNanos;
    }

    /** Starts a batch of {@code count} commands, to be awaited by the calling thread. */
    public void expect(int count) {
        waiter = Thread.currentThread();
        failures.set(0);
        firstFailure = null;
        remaining.set(count);
    }

    @Override
    public void onResult(CommandMessage<?> commandMessage, CommandResultMessage<?> commandResultMessage) {
        if (commandResultMessage.isExceptional()) {
            failed(commandResultMessage.exceptionResult());
        } else {
            completed();
        }
    }

    /** One command of the batch succeeded. */
    public void completed() {
        if (remaining.decrementAndGet() == 0) {
            LockSupport.unpark(waiter);
        }
    }

    /** One command of the batch failed with {@code cause}. */
    public void failed(Throwable cause) {
        if (failures.getAndIncrement() == 0) {
            firstFailure = cause;
        }
        completed();
    }

    /**
     * Parks until every command of the batch has reported.
     *
     * @throws IllegalStateException if any command failed, or if not all reported within the timeout
     */
    public void await() {
        long deadline = System.nanoTime() + timeoutNanos;
        int left;
        while ((left = remaining.get()) > 0) {
            long nanosLeft = deadline - System.nanoTime();
            if (nanosLeft <= 0) {
                throw new IllegalStateException(left + " commands of the batch did not report within "
                                                + timeoutNanos / 1_000_000 + " ms");
            }
            LockSupport.parkNanos(this, nanosLeft);
        }
        if (failures.get() > 0) {
            throw new IllegalStateException(failures.get() + " commands of the batch failed; the first with: "
                                            + firstFailure, firstFailure);
        }
    }
}
