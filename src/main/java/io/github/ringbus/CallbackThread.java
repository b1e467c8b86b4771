package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.axonframework.commandhandling.callbacks.NoOpCallback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Calls the callbacks that may wait, on a thread of its own, so that a callback is as free as on
 * {@code SimpleCommandBus}: it may dispatch commands and wait for them ({@code sendAndWait}, a future's {@code get}),
 * or block on anything else, and the ring goes on. A callback that waits on a pipeline thread would hang the bus:
 * the command it waits for completes on that very thread.
 * <p>
 * <b>Which callbacks come here</b> ({@link #runsOnCompleteThread}). Axon's own callbacks that only wake a waiting
 * thread or log run on the complete stage's thread, saving a hand-off: the {@link FutureCallback} of
 * {@code sendAndWait} (or one a caller made and waits on), and the no-op and logging callbacks of
 * {@code dispatch(command)}. Every other callback comes here: the application's own, and the future of
 * {@code CommandGateway.send}, onto which callers chain functions that may wait. A command dispatched on this thread
 * with only Axon's callbacks is completed on the complete stage's thread: this thread may be waiting for it.
 * <p>
 * <b>Commands a store attempt held.</b> The commands a store attempt's subscribers sent ({@code HeldEffects}) are
 * handed over here too once it committed, to enter the ring from this thread, which may wait for a free slot (the store
 * thread that released them frees slots itself, and may not).
 * <p>
 * <b>Order.</b> One thread calls the handed-off callbacks one at a time, in the order the complete stages handed them
 * over (ring order, with one store thread). A callback that blocks holds up the callbacks handed over after it, never
 * the ring; one that waits for an application callback of a command it sent itself (a latch that only that callback
 * opens) waits for ever, as that callback is behind it.
 * <p>
 * <b>Threads.</b> {@link #hand} from the complete stage threads and from shutdown's thread; {@link #start} and
 * {@link #stop} from the bus's lifecycle. The queue and the flags are guarded by {@link #lock}. What a callback
 * throws is logged and goes no further; an interrupt a callback leaves on the thread is cleared before the next.
 * Once the thread has ended (after shutdown), {@link #hand} calls the callback on the calling thread.
 */
final class CallbackThread {

    private static final Logger logger = LoggerFactory.getLogger(CallbackThread.class);
    /** Spins before yielding, as the stage threads' wait strategy ({@code AdaptiveWaitStrategy}, measured there). */
    private static final int SPINS = 100;
    /** How long the runner yields before it blocks, as the stage threads do ({@code AdaptiveWaitStrategy}). */
    private static final long YIELD_NANOS = TimeUnit.MICROSECONDS.toNanos(200);

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition handedOver = lock.newCondition();
    /**
     * Callback, command and result of each handed-over call, three entries per call; guarded by {@link #lock}.
     * Unbounded on purpose: a callback that waits for a command must never stop the complete stage from reaching
     * that command. An {@code ArrayDeque} grows and never shrinks, so a busy bus adds to it without allocating.
     */
    private ArrayDeque<Object> incoming = new ArrayDeque<>(3 * 256);
    /** The calls taken out of {@link #incoming} in one go; read and written by the runner thread only. */
    private ArrayDeque<Object> taken = new ArrayDeque<>(3 * 256);
    /** Guarded by {@link #lock}. */
    private boolean started;
    /** Guarded by {@link #lock}: no more calls will be handed over, and the thread ends once it has made them. */
    private boolean closing;
    /** Guarded by {@link #lock}: the thread has made its last call and ended; {@link #hand} calls in place. */
    private boolean ended;
    /** Guarded by {@link #lock}: the runner waits on {@link #handedOver} (so {@link #hand} signals only then). */
    private boolean runnerWaiting;
    /**
     * Calls handed over so far; written by {@link #hand} under the lock, read by the runner without it while it spins
     * before blocking (see {@link #awaitHandedOver}).
     */
    private volatile long handedCount;
    private final Runner runner;

    /** @param name the name of the thread (not started here) */
    CallbackThread(String name) {
        this.runner = new Runner(this::run, name);
    }

    /**
     * @param callback                   the callback a command completes with
     * @param dispatchedOnCallbackThread whether the command was dispatched on a callback thread
     * @return true when the callback is called on the complete stage's thread (see the class)
     */
    static boolean runsOnCompleteThread(CommandCallback<?, ?> callback, boolean dispatchedOnCallbackThread) {
        CommandCallback<?, ?> own = TracedCallback.callersOwn(callback);
        if (wakesOrLogsOnly(own)) {
            return true;
        }
        return dispatchedOnCallbackThread && onlyAxonsCallbacks(own, 0);
    }

    /** @return true when the calling thread is a callback thread (of any bus) */
    static boolean isCallbackThread() {
        return Thread.currentThread() instanceof Runner;
    }

    /** Axon's callbacks that wake a waiting thread or log, and run nothing else: exact classes, not subclasses. */
    private static boolean wakesOrLogsOnly(CommandCallback<?, ?> callback) {
        Class<?> type = callback.getClass();
        return type == FutureCallback.class || type == NoOpCallback.class || type == LoggingCallback.class;
    }

    /**
     * @return true when the callback is one of {@link #wakesOrLogsOnly} or Axon's wrappers of only such callbacks (the
     * gateway's future, failure logging, retries: {@link AxonInternals#wrappedCallback})
     */
    private static boolean onlyAxonsCallbacks(CommandCallback<?, ?> callback, int depth) {
        if (wakesOrLogsOnly(callback)) {
            return true;
        }
        if (depth > 8 || !AxonInternals.isWrappingCallback(callback)) {
            return false;
        }
        for (int index = 0; index < 2; index++) {
            CommandCallback<?, ?> wrapped = AxonInternals.wrappedCallback(callback, index);
            if (wrapped != null && !onlyAxonsCallbacks(wrapped, depth + 1)) {
                return false;
            }
        }
        return true;
    }

    /** Starts the thread; calls handed over before it ran on the calling thread. */
    void start() {
        lock.lock();
        try {
            started = true;
        } finally {
            lock.unlock();
        }
        runner.start();
    }

    /**
     * Hands a callback over to be called on this thread, after every call handed over before it; calls it here when
     * the thread has not started or has ended.
     */
    void hand(CommandCallback<Object, Object> callback, CommandMessage<?> command, CommandResultMessage<?> result) {
        lock.lock();
        try {
            if (started && !ended) {
                incoming.add(callback);
                incoming.add(command);
                incoming.add(result);
                handedCount = handedCount + 1; // under the lock: one writer at a time
                if (runnerWaiting) {
                    handedOver.signal();
                }
                return;
            }
        } finally {
            lock.unlock();
        }
        call(callback, command, result);
    }

    /**
     * Lets the thread make the calls handed over so far, and any handed over until it ends, then end; waits for that
     * at most {@code graceNanos} (not at all on the thread itself, when a callback shuts the bus down).
     */
    void stop(long graceNanos) throws InterruptedException {
        lock.lock();
        try {
            closing = true;
            if (runnerWaiting) {
                handedOver.signal();
            }
            if (!started) {
                return;
            }
        } finally {
            lock.unlock();
        }
        if (Thread.currentThread() == runner) {
            return;
        }
        TimeUnit.NANOSECONDS.timedJoin(runner, graceNanos);
        if (runner.isAlive()) {
            logger.warn("ringbus callback thread [{}] is still in a callback after shutdown: the callbacks handed "
                                + "over after it are called once it returns", runner.getName());
        }
    }

    /** The thread, to tell its name and whether it ended; for tests and diagnostics. */
    Thread thread() {
        return runner;
    }

    private void run() {
        long seen = 0;
        while (true) {
            awaitHandedOver(seen);
            seen = takeHandedOver();
            if (seen < 0) {
                return;
            }
            // Three entries per call (see incoming): no record allocated per callback.
            while (!taken.isEmpty()) {
                @SuppressWarnings("unchecked")
                CommandCallback<Object, Object> callback = (CommandCallback<Object, Object>) taken.poll();
                CommandMessage<?> command = (CommandMessage<?>) taken.poll();
                CommandResultMessage<?> result = (CommandResultMessage<?>) taken.poll();
                call(callback, command, result);
                if (Thread.interrupted()) {
                    logger.debug("A callback of command [{}] left an interrupt on the callback thread: cleared",
                                 command.getCommandName());
                }
            }
        }
    }

    /**
     * Spins, then yields, for a while before {@link #takeHandedOver} blocks, as the stage threads' wait strategy
     * does ({@code AdaptiveWaitStrategy}): under load the next callback comes within microseconds, and a thread that
     * blocked costs a wake-up per callback (measured: see docs/benchmarks.md, "Callbacks off the stage threads").
     *
     * @param seen the count of calls handed over that the runner has taken
     */
    private void awaitHandedOver(long seen) {
        if (handedCount != seen) {
            return;
        }
        for (int i = 0; i < SPINS; i++) {
            Thread.onSpinWait();
            if (handedCount != seen) {
                return;
            }
        }
        long yieldUntil = System.nanoTime() + YIELD_NANOS;
        do {
            Thread.yield();
            if (handedCount != seen) {
                return;
            }
        } while (System.nanoTime() - yieldUntil < 0);
    }

    /**
     * Waits for calls and moves them all to {@link #taken}, swapping the two queues under the lock.
     *
     * @return the count of calls handed over so far, all of them now taken; -1 when closing and nothing is left: the
     * thread ends
     */
    private long takeHandedOver() {
        lock.lock();
        try {
            while (incoming.isEmpty()) {
                if (closing) {
                    ended = true;
                    return -1;
                }
                runnerWaiting = true;
                try {
                    handedOver.awaitUninterruptibly();
                } finally {
                    runnerWaiting = false;
                }
            }
            ArrayDeque<Object> full = incoming;
            incoming = taken;
            taken = full;
            return handedCount;
        } finally {
            lock.unlock();
        }
    }

    private static void call(CommandCallback<Object, Object> callback, CommandMessage<?> command,
                             CommandResultMessage<?> result) {
        try {
            callback.onResult(command, result);
        } catch (Throwable callbackFailure) {
            logger.warn("The callback of command [{}] threw an exception", command.getCommandName(), callbackFailure);
        }
    }

    /** The thread that calls the handed-off callbacks; see {@link #isCallbackThread()}. */
    private static final class Runner extends Thread {

        Runner(Runnable run, String name) {
            super(run, name);
            setDaemon(true);
        }
    }
}
