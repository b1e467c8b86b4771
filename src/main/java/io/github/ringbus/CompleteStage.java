package io.github.ringbus;

import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.Sequence;

import java.util.function.Function;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * Stage 4: finishes each command once both store and publish are done with it. It runs the commit and after-commit
 * phases of the command's Unit of Work (so {@code onCommit} and {@code afterCommit} handlers run after the events
 * are stored) or rolls it back, reports to the message monitor,
 * and calls the caller's callback exactly once: with the handler's result, or with the first failure of any stage.
 * Then it drops the slot's references. One thread, in ring order.
 * <p>
 * A callback that may wait is handed to the bus's {@link CallbackThread} and called there, after the command has
 * completed here; Axon's callbacks that only wake a waiting thread or log (the {@code FutureCallback} of a
 * {@code sendAndWait}, the no-op and logging callbacks) are called on this thread
 * ({@link CallbackThread#runsOnCompleteThread}).
 * <p>
 * Tests: {@code behaviour.CallbackTest}, {@code behaviour.ShutdownTest}, {@code behaviour.MonitorTest}.
 */
final class CompleteStage implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(CompleteStage.class);

    private final PipelineMonitor monitor;
    private final CallbackThread callbacks;
    private final boolean timed;
    private volatile Sequence sequence;

    /**
     * @param monitor   the pipeline's monitor
     * @param callbacks the thread that calls the callbacks that may wait
     */
    CompleteStage(PipelineMonitor monitor, CallbackThread callbacks) {
        this.monitor = monitor;
        this.callbacks = callbacks;
        this.timed = monitor.timesStages();
    }

    @Override
    public void setSequenceCallback(Sequence sequenceCallback) {
        this.sequence = sequenceCallback;
    }

    /**
     * @return the ring sequence up to which every command has completed
     */
    long completedSequence() {
        Sequence current = sequence;
        return current == null ? -1 : current.get();
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        if (timed) {
            slot.completingNanos = System.nanoTime();
        }
        complete(slot, monitor, callbacks);
    }

    /**
     * Completes a slot whatever happened to its command and whatever user code throws on the way (commit handlers,
     * the message monitor, the pipeline monitor, the callback): the callback is called exactly once and the slot is
     * cleared for its next command. The one place a slot is finished. Does nothing to a slot whose command another
     * thread has taken on already (a shutdown that gave up waiting for this thread: see {@link #abandon}).
     */
    static void complete(CommandSlot slot, PipelineMonitor monitor, CallbackThread callbacks) {
        if (!slot.claimCompletion()) {
            return;
        }
        try {
            Throwable failure = finishUnitOfWork(slot);
            Throwable reported = failure != null ? failure : slot.handlerFailure;
            CommandResultMessage<?> result = handlersResultStands(slot.result, failure)
                    ? slot.result
                    : resultOf(reported);
            report(slot, reported, monitor);
            callBack(slot, result, callbacks);
        } finally {
            slot.clear();
        }
    }

    /**
     * Fails a command that a stage thread which did not end at shutdown may still reach, unless a thread completed it
     * already (the failure is made from the command's name once the command is claimed): reports the failure to the message monitor and the callback, and leaves the slot and its Unit of Work
     * alone, for that thread may still be reading them. The busy thread's own attempt to complete it then does
     * nothing.
     */
    static void abandon(CommandSlot slot, Function<String, Throwable> failureForCommand, CallbackThread callbacks) {
        if (!slot.claimCompletion()) {
            return; // and read nothing of it: the thread that claimed it may be clearing it
        }
        Throwable failure = failureForCommand.apply(slot.commandName());
        try {
            slot.monitorCallback.reportFailure(failure);
        } catch (Throwable monitorFailure) {
            logger.warn("The message monitor failed on command [{}]", slot.commandName(), monitorFailure);
        }
        callBack(slot, asCommandResultMessage(failure), callbacks);
    }

    /** Calls the callback here when it cannot wait, else hands it to the callback thread (see the class). */
    private static void callBack(CommandSlot slot, CommandResultMessage<?> result, CallbackThread callbacks) {
        if (!CallbackThread.runsOnCompleteThread(slot.callback, slot.dispatchedOnCallbackThread)) {
            callbacks.hand(slot.callback, slot.command, result);
            return;
        }
        try {
            slot.callback.onResult(slot.command, result);
        } catch (Throwable callbackFailure) {
            logger.warn("The callback of command [{}] threw an exception", slot.commandName(), callbackFailure);
        }
    }

    /**
     * Commits a handled command's Unit of Work (paused after its prepare-commit phase) or rolls it back.
     *
     * @return the first failure of the command, a commit handler's included, or null
     */
    private static Throwable finishUnitOfWork(CommandSlot slot) {
        Throwable failure = slot.failure();
        SlotUnitOfWork unitOfWork = slot.unitOfWork;
        if (unitOfWork.phase() != UnitOfWork.Phase.PREPARE_COMMIT) {
            return failure;
        }
        unitOfWork.resume();
        if (failure == null) {
            try {
                unitOfWork.finishCommit();
            } catch (Throwable commitFailure) {
                return commitFailure;
            }
        } else {
            try {
                unitOfWork.rollback(failure);
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
        }
        return failure;
    }

    /**
     * The result of a command that failed after its handler (in the store, a subscriber, a commit handler) or never
     * reached it: built here, without correlation data, as Axon's buses build the result of a failed commit.
     */
    private static CommandResultMessage<?> resultOf(Throwable reported) {
        return reported != null ? asCommandResultMessage(reported) : asCommandResultMessage((Object) null);
    }

    /** True when the handle stage's result message is what the caller gets: no later failure replaced it. */
    private static boolean handlersResultStands(CommandResultMessage<?> handled, Throwable failure) {
        if (handled == null) {
            return false;
        }
        return failure == null || (handled.isExceptional() && handled.exceptionResult() == failure);
    }

    /** Tells the message monitor and the pipeline monitor; what they throw is logged and goes no further. */
    private static void report(CommandSlot slot, Throwable reported, PipelineMonitor monitor) {
        try {
            if (reported == null) {
                slot.monitorCallback.reportSuccess();
            } else {
                slot.monitorCallback.reportFailure(reported);
            }
        } catch (Throwable monitorFailure) {
            logger.warn("The message monitor failed on command [{}]", slot.commandName(), monitorFailure);
        }
        try {
            monitor.commandCompleted(slot.commandName(), reported, slot);
        } catch (Throwable monitorFailure) {
            logger.warn("The pipeline monitor failed on command [{}]", slot.commandName(), monitorFailure);
        }
    }
}
