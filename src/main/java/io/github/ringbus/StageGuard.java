package io.github.ringbus;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.Sequence;
import org.axonframework.commandhandling.CommandMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs one stage on one slot and hands the thread back fit for the next slot: whatever the stage's user code did,
 * the Disruptor's processor sees {@code onEvent} return normally, so it moves on by exactly one slot.
 * <ul>
 *   <li>A failure that escaped the stage (the stages catch their own: one that escapes is a ringbus bug) is
 *       recorded on this very slot, whose command then fails with it, and logged. The Disruptor's exception
 *       handler is never involved: it is also called for failures of the wait, with the slot of the previous
 *       command, after which the processor skips a slot that may not have been handed over yet.</li>
 *   <li>An interrupt flag that the stage's user code left set is cleared ({@link LeftInterrupts}), so that the
 *       thread's next wait neither throws nor spins, and the next command's user code finds it clear.</li>
 * </ul>
 * Every stage the Disruptor runs, and every stage a {@link Topology#COMPACT} thread runs in turn, is wrapped in one.
 * Allocates nothing per slot.
 * <p>
 * Tests: {@code behaviour.InterruptTest}, {@code behaviour.SlotProtocolTest}.
 */
final class StageGuard implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(StageGuard.class);

    private final String stage;
    private final EventHandler<CommandSlot> delegate;
    private final LeftInterrupts leftInterrupts;

    /**
     * @param stage          the stage's name, for the log
     * @param delegate       the stage
     * @param leftInterrupts the bus's record of interrupt flags left by user code
     */
    StageGuard(String stage, EventHandler<CommandSlot> delegate, LeftInterrupts leftInterrupts) {
        this.stage = stage;
        this.delegate = delegate;
        this.leftInterrupts = leftInterrupts;
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        // Read before the stage runs: the complete stage clears the slot.
        CommandMessage<?> command = slot.command;
        try {
            delegate.onEvent(slot, sequence, endOfBatch);
        } catch (Throwable bug) {
            logger.error("ringbus stage [{}] failed on command in slot {}; the command fails with it", stage,
                         sequence, bug);
            slot.recordStageFailure(bug);
        } finally {
            leftInterrupts.clear(stage, command);
        }
    }

    @Override
    public void onBatchStart(long batchSize, long queueDepth) {
        try {
            delegate.onBatchStart(batchSize, queueDepth);
        } catch (Throwable bug) {
            logger.error("ringbus stage [{}] failed between two batches", stage, bug);
        } finally {
            leftInterrupts.clear(stage, null); // a command run again there is user code too
        }
    }

    @Override
    public void onStart() {
        delegate.onStart();
    }

    @Override
    public void onShutdown() {
        delegate.onShutdown();
    }

    @Override
    public void onTimeout(long sequence) {
        try {
            delegate.onTimeout(sequence);
        } catch (Throwable bug) {
            logger.error("ringbus stage [{}] failed while woken from its wait", stage, bug);
        } finally {
            leftInterrupts.clear(stage, null);
        }
    }

    @Override
    public void setSequenceCallback(Sequence sequenceCallback) {
        delegate.setSequenceCallback(sequenceCallback);
    }

    @Override
    public String toString() {
        return "StageGuard[" + stage + "]";
    }
}
