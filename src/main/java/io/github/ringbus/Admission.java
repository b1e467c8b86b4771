package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.axonframework.commandhandling.callbacks.NoOpCallback;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.monitoring.MessageMonitor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * Lets commands into the ring, or tells the caller why not. A dispatcher that the {@link RingLifecycle} let in claims
 * a slot as the {@link FullRingPolicy} says and hands the command over; a command that gets no slot, or comes while
 * the bus does not run, is reported to the message monitor and then the callback, on the dispatching thread, and
 * never enters the ring.
 * <p>
 * Thread-safe: any number of dispatchers at once. A stage thread never waits for a slot: it could be the one that
 * must free it.
 * <p>
 * Tests: {@code behaviour.RefusalTest}, {@code behaviour.CallbackTest}, {@code behaviour.DispatchAllTest}.
 */
final class Admission {

    private static final Logger logger = LoggerFactory.getLogger(Admission.class);

    private final Pipeline pipeline;
    private final RingLifecycle lifecycle;
    private final FullRingPolicy fullRingPolicy;
    private final long fullRingTimeoutNanos;
    /** Fire-and-forget commands refused (their callback tells no one): logged, at most once a second. */
    private final RefusalLog refusedFireAndForget = new RefusalLog();

    Admission(Pipeline pipeline, RingLifecycle lifecycle, FullRingPolicy fullRingPolicy, Duration fullRingTimeout) {
        this.pipeline = pipeline;
        this.lifecycle = lifecycle;
        this.fullRingPolicy = fullRingPolicy;
        this.fullRingTimeoutNanos = fullRingTimeout.toNanos();
    }

    /**
     * Claims a slot for the command and hands it to the ring; or, when no slot is to be had, fails the command.
     * The caller is inside the lifecycle's gate.
     */
    void admit(CommandMessage<?> command, CommandCallback<Object, Object> callback,
               MessageMonitor.MonitorCallback monitorCallback) {
        long sequence = claim(command, callback, monitorCallback);
        if (sequence >= 0) {
            pipeline.handOver(sequence, command, callback, monitorCallback);
        }
    }

    /**
     * Claims slots for many commands and hands them to the ring in their order, at most {@link #largestClaim} per
     * claim (one claim and one publish for each such chunk). A chunk that finds too few free slots fails with every
     * command after it under {@code FAIL_FAST}; otherwise it waits, asking for fewer slots at a time while the ring
     * stays too full for it, until the timeout ({@code BLOCK_WITH_TIMEOUT}, for the whole call) or a shutdown. The
     * caller is inside the lifecycle's gate and on no pipeline thread.
     *
     * @param commands         the commands, after the dispatch interceptors, each with a handler
     * @param count            how many of {@code commands} to admit, from index 0
     * @param callback         the callback of every command
     * @param monitorCallbacks the message monitor's callback of each command, at the same index
     */
    void admitAll(CommandMessage<?>[] commands, int count, CommandCallback<Object, Object> callback,
                  MessageMonitor.MonitorCallback[] monitorCallbacks) {
        int largest = largestClaim(pipeline.ringSize());
        long deadline = fullRingPolicy == FullRingPolicy.BLOCK_WITH_TIMEOUT
                ? System.nanoTime() + fullRingTimeoutNanos : Long.MAX_VALUE;
        int from = 0;
        while (from < count) {
            if (lifecycle.state() != RingLifecycle.State.RUNNING) {
                // Shutdown began: it waits for the dispatchers inside the gate, so the rest of the list must not go
                // on entering the ring (it could for as long as the ring drains); each is refused as after shutdown.
                failFrom(commands, from, count, callback, monitorCallbacks, shutdownDuringList(commands[from], from,
                                                                                               count));
                return;
            }
            int chunk = Math.min(largest, count - from);
            long highest = pipeline.tryClaim(chunk);
            if (highest < 0 && fullRingPolicy == FullRingPolicy.FAIL_FAST) {
                failFrom(commands, from, count, callback, monitorCallbacks, ringFull(
                        commands[from], "the full-ring policy is FAIL_FAST (it was dispatched with " + (count - 1)
                                + " other(s) by dispatchAll, which needed " + chunk + " free slots at once)"));
                return;
            }
            int attempt = 0;
            while (highest < 0) {
                Throwable stop = lifecycle.state() != RingLifecycle.State.RUNNING
                        ? shutdownDuringList(commands[from], from, count)
                        : whyStopWaiting(commands[from], deadline, true);
                if (stop != null) {
                    failFrom(commands, from, count, callback, monitorCallbacks, stop);
                    return;
                }
                if (++attempt % SHRINK_AFTER_ATTEMPTS == 0 && chunk > 1) {
                    // The ring stays too full for the whole chunk (single dispatchers take every slot that frees):
                    // ask for fewer at a time, so that the list still gets in, in its order.
                    chunk /= 2;
                }
                Backoff.FOR_SLOT.idle(attempt);
                highest = pipeline.tryClaim(chunk);
            }
            pipeline.handOverAll(highest, chunk, commands, from, callback, monitorCallbacks);
            from += chunk;
        }
    }

    /** Waits of {@link #admitAll} for a chunk before it asks for half as many slots (about 10 ms, then 8 ms each). */
    private static final int SHRINK_AFTER_ATTEMPTS = 8;

    private static ShutdownInProgressException shutdownDuringList(CommandMessage<?> first, int from, int count) {
        return new ShutdownInProgressException(
                "RingCommandBus began shutting down while dispatchAll handed its commands to the ring: command ["
                        + first.getCommandName() + "] (" + (from + 1) + " of " + count + ") and the "
                        + (count - from - 1) + " after it were not handled");
    }

    private static void failFrom(CommandMessage<?>[] commands, int from, int count,
                                 CommandCallback<Object, Object> callback,
                                 MessageMonitor.MonitorCallback[] monitorCallbacks, Throwable refusal) {
        for (int i = from; i < count; i++) {
            fail(commands[i], callback, monitorCallbacks[i], refusal);
        }
    }

    /**
     * The most slots one claim of {@link #admitAll} asks for: a quarter of the ring, at most {@value #LARGEST_CLAIM}.
     * A claim needs that many slots free at the same moment while single dispatchers take every slot that frees;
     * asking for the whole ring could wait for ever under their load, and beyond a few hundred commands a larger claim
     * saves nothing measurable.
     */
    static int largestClaim(int ringSize) {
        return Math.max(1, Math.min(LARGEST_CLAIM, ringSize / 4));
    }

    private static final int LARGEST_CLAIM = 256;

    /**
     * Whether a dispatcher waiting for slots must give up, and why: the bus shut down (so the ring may never free
     * one), the dispatching thread was interrupted (a park returns at once while the flag is set, so waiting on would
     * spin; the flag is left set for its owner), or the deadline passed.
     *
     * @param first    the (first) command waiting
     * @param deadline {@link System#nanoTime()} at which to give up; {@link Long#MAX_VALUE}: never
     * @param many     whether {@code first} waits with the commands after it ({@code dispatchAll})
     * @return the failure to give the waiting command(s), or null to wait on
     */
    private Throwable whyStopWaiting(CommandMessage<?> first, long deadline, boolean many) {
        if (!lifecycle.slotsMayFree()) {
            return new ShutdownInProgressException(
                    "RingCommandBus shut down while command [" + first.getCommandName() + "] " + (many
                            ? "and those dispatched after it with dispatchAll waited for free slots; they were"
                            : "waited for a free slot; it was") + " not handled");
        }
        if (Thread.currentThread().isInterrupted()) {
            return ringFull(first, "the dispatching thread [" + Thread.currentThread().getName() + "] was "
                    + "interrupted while it waited for " + (many ? "them; the commands were" : "one; the command was")
                    + " not handled, and the thread's interrupt flag is left set");
        }
        if (deadline != Long.MAX_VALUE && System.nanoTime() - deadline >= 0) {
            return ringFull(first, "they stayed taken for " + Duration.ofNanos(fullRingTimeoutNanos).toMillis()
                    + " ms" + (many ? " (while dispatchAll waited for room for many commands at once)" : ""));
        }
        return null;
    }

    private long claim(CommandMessage<?> command, CommandCallback<?, ?> callback,
                       MessageMonitor.MonitorCallback monitorCallback) {
        long sequence = pipeline.tryClaim();
        if (sequence >= 0) {
            return sequence;
        }
        if (PipelineThreads.isPipelineThread()) {
            // Waiting for a slot on a pipeline thread would wait for this very thread: never wait here.
            fail(command, callback, monitorCallback, ringFull(command, "it was dispatched from ringbus pipeline thread ["
                    + Thread.currentThread().getName() + "], which cannot wait for a slot it must free itself"));
            return -1;
        }
        switch (fullRingPolicy) {
            case FAIL_FAST:
                fail(command, callback, monitorCallback, ringFull(command, "the full-ring policy is FAIL_FAST"));
                return -1;
            case BLOCK_WITH_TIMEOUT:
                return waitForSlot(command, callback, monitorCallback, System.nanoTime() + fullRingTimeoutNanos);
            default:
                return waitForSlot(command, callback, monitorCallback, Long.MAX_VALUE);
        }
    }

    /**
     * Waits for a free slot until the deadline ({@link Long#MAX_VALUE}: {@link FullRingPolicy#BLOCK}, no deadline),
     * and in any case only as long as the ring can still free one, so that a shutdown whose ring cannot drain in time
     * does not leave this dispatcher parked for ever. An interrupt of the dispatching thread ends the wait as it ends
     * any blocking call: the command fails with a {@link RingFullException} that says so, nothing of it enters the
     * ring, and the thread's interrupt flag stays set for its owner ({@link #whyStopWaiting}).
     */
    private long waitForSlot(CommandMessage<?> command, CommandCallback<?, ?> callback,
                             MessageMonitor.MonitorCallback monitorCallback, long deadline) {
        int attempt = 0;
        long sequence;
        while ((sequence = pipeline.tryClaim()) < 0) {
            Throwable stop = whyStopWaiting(command, deadline, false);
            if (stop != null) {
                fail(command, callback, monitorCallback, stop);
                return -1;
            }
            Backoff.FOR_SLOT.idle(attempt++);
        }
        return sequence;
    }

    private RingFullException ringFull(CommandMessage<?> command, String why) {
        return new RingFullException("Command [" + command.getCommandName() + "] was not accepted: all "
                                             + pipeline.ringSize() + " slots of the ring are taken and " + why);
    }

    /**
     * A command that came while the bus does not run (before start, or from shutdown on): reported to the message
     * monitor and the callback. Fire-and-forget commands are logged as well, at most once a second.
     */
    void refuse(CommandMessage<?> command, CommandCallback<?, ?> callback,
                MessageMonitor.MonitorCallback monitorCallback) {
        RuntimeException refusal = lifecycle.state() == RingLifecycle.State.NEW
                ? new IllegalStateException("RingCommandBus has not been started; command ["
                                                    + command.getCommandName() + "] was not handled")
                : new ShutdownInProgressException("RingCommandBus is shut down; command ["
                                                          + command.getCommandName() + "] was not handled");
        CommandCallback<?, ?> callersOwn = TracedCallback.callersOwn(callback);
        if (callersOwn == LoggingCallback.INSTANCE || callersOwn == NoOpCallback.INSTANCE) {
            // Fire-and-forget: nobody hears of the refusal but the monitor and this log, which says it once a
            // second (a burst after shutdown would otherwise log a line per command).
            refusedFireAndForget.record(refusal);
            fail(command, TracedCallback.replacingCallersOwn(callback, NoOpCallback.INSTANCE),
                 monitorCallback, refusal);
            return;
        }
        fail(command, callback, monitorCallback, refusal);
    }

    /**
     * Reports a command that never entered the ring: to the message monitor (whose failure is logged, so that the
     * callback is still called), then to the callback, on the dispatching thread. What the callback throws is logged
     * as the complete stage logs it: thrown out of {@code dispatch}, it would tell the caller that the dispatch failed
     * without a callback, when the callback has been called.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static void fail(CommandMessage<?> command, CommandCallback callback,
                     MessageMonitor.MonitorCallback monitorCallback, Throwable failure) {
        try {
            monitorCallback.reportFailure(failure);
        } catch (RuntimeException | Error monitorFailure) {
            logger.warn("The message monitor failed to record the refusal of command [{}]",
                        command.getCommandName(), monitorFailure);
        }
        try {
            callback.onResult(command, asCommandResultMessage(failure));
        } catch (Throwable callbackFailure) {
            logger.warn("The callback of refused command [{}] threw an exception", command.getCommandName(),
                        callbackFailure);
        }
    }
}
