package io.github.ringbus.stages;

import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.Sequence;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * Stage 4: finishes each command once both store and publish are done with it. It runs the commit and after-commit
 * phases of the command's Unit of Work (so {@code onCommit} and {@code afterCommit} handlers run after the events
 * are stored) or rolls it back, reports to the message monitor,
 * and calls the caller's callback exactly once: with the handler's result, or with the first failure of any stage.
 * Then it drops the slot's references. One thread, in ring order.
 * <p>
 * Callbacks run on this thread. A callback that blocks holds up every command behind it; a callback that dispatches
 * is refused at once when the ring is full (see {@link io.github.ringbus.bus.FullRingPolicy}).
 */
final class CompleteStage implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(CompleteStage.class);

    private final PipelineMonitor monitor;
    private final boolean timed;
    private volatile Sequence sequence;

    CompleteStage(PipelineMonitor monitor) {
        this.monitor = monitor;
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
        complete(slot, monitor);
    }

    static void complete(CommandSlot slot, PipelineMonitor monitor) {
        Throwable failure = slot.failure();
        SlotUnitOfWork unitOfWork = slot.unitOfWork;
        // A handled command's Unit of Work waits here, paused after its prepare-commit phase.
        if (unitOfWork.phase() == UnitOfWork.Phase.PREPARE_COMMIT) {
            unitOfWork.resume();
            if (failure == null) {
                try {
                    unitOfWork.finishCommit();
                } catch (Throwable commitFailure) {
                    failure = commitFailure;
                }
            } else {
                try {
                    unitOfWork.rollback(failure);
                } catch (Throwable rollbackFailure) {
                    failure.addSuppressed(rollbackFailure);
                }
            }
        }
        Throwable reported = failure != null ? failure : slot.handlerFailure;
        CommandResultMessage<?> result = reported != null
                ? asCommandResultMessage(reported)
                : asCommandResultMessage(slot.result);
        if (reported == null) {
            slot.monitorCallback.reportSuccess();
        } else {
            slot.monitorCallback.reportFailure(reported);
        }
        try {
            monitor.commandCompleted(slot.commandName(), reported, slot);
        } catch (Throwable monitorFailure) {
            logger.warn("The pipeline monitor failed on command [{}]", slot.commandName(), monitorFailure);
        }
        try {
            slot.callback.onResult(slot.command, result);
        } catch (Throwable callbackFailure) {
            logger.warn("The callback of command [{}] threw an exception", slot.commandName(), callbackFailure);
        } finally {
            slot.clear();
        }
    }
}
