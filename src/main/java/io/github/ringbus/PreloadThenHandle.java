package io.github.ringbus;

import com.lmax.disruptor.EventHandler;

/**
 * {@link Topology#COMPACT}'s first thread: preloads each command's aggregate, then handles the command, slot by slot.
 * The preload stage's and the handle stage's rules hold as on two threads: the slot is preloaded before it is
 * handled, and the one handler thread owns every aggregate.
 * <p>
 * Tests: {@code CompactTopologyTest}.
 */
final class PreloadThenHandle implements EventHandler<CommandSlot> {

    private final EventHandler<CommandSlot> preload;
    private final EventHandler<CommandSlot> handle;

    /**
     * @param preload the preload stage, in its {@link StageGuard}
     * @param handle  the one handle stage, in its {@link StageGuard}
     */
    PreloadThenHandle(EventHandler<CommandSlot> preload, EventHandler<CommandSlot> handle) {
        this.preload = preload;
        this.handle = handle;
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) throws Exception {
        preload.onEvent(slot, sequence, endOfBatch);
        handle.onEvent(slot, sequence, endOfBatch);
    }

    /** The preload stage learns the batch's end (reads ahead); the handle stage serves re-runs here ({@link ReRuns}). */
    @Override
    public void onBatchStart(long batchSize, long queueDepth) {
        preload.onBatchStart(batchSize, queueDepth);
        handle.onBatchStart(batchSize, queueDepth);
    }

    /** The handle stage reports its progress before it waits for earlier commands ({@link HandleStage}). */
    @Override
    public void setSequenceCallback(com.lmax.disruptor.Sequence sequenceCallback) {
        handle.setSequenceCallback(sequenceCallback);
    }

    @Override
    public void onTimeout(long sequence) throws Exception {
        handle.onTimeout(sequence);
    }
}
