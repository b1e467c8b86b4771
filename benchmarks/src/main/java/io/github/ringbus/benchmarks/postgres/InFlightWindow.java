package io.github.ringbus.benchmarks.postgres;

import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;

import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

/**
 * One dispatching thread's window of commands awaiting their callback: a dispatch waits while the window is full, a
 * callback frees its place, the first failed command fails the benchmark at the next dispatch or drain. A synchronous
 * bus answers before {@code dispatch} returns, so its window never holds more than one command.
 */
final class InFlightWindow implements CommandCallback<Object, Object> {

    private final int size;
    private final Semaphore places;
    private final AtomicReference<Throwable> failure = new AtomicReference<>();

    /** @param size the most commands awaiting their callback; at least 1 */
    InFlightWindow(int size) {
        this.size = Math.max(1, size);
        this.places = new Semaphore(this.size);
    }

    /** Dispatches once the window has room. */
    void dispatch(CommandBus bus, CommandMessage<?> command) {
        throwIfFailed();
        places.acquireUninterruptibly();
        bus.dispatch(command, this);
    }

    @Override
    public void onResult(CommandMessage<?> commandMessage, CommandResultMessage<?> result) {
        if (result.isExceptional()) {
            failure.compareAndSet(null, result.exceptionResult());
        }
        places.release();
    }

    /** Waits for the commands still in flight, so that iterations do not overlap. */
    void drain() throws InterruptedException {
        if (!places.tryAcquire(size, 60, TimeUnit.SECONDS)) {
            throw new IllegalStateException("Commands did not complete within a minute");
        }
        places.release(size);
        throwIfFailed();
    }

    private void throwIfFailed() {
        Throwable failed = failure.get();
        if (failed != null) {
            throw new IllegalStateException("A command failed", failed);
        }
    }
}
