package io.github.ringbus;

import com.lmax.disruptor.EventHandler;

/**
 * {@link Topology#COMPACT}'s first thread: preloads each command's aggregate, then handles the command, slot by slot.
 * The preload stage's and the handle stage's rules hold as on two threads: the slot is preloaded before it is
 * handled, and the one handler thread owns every aggregate.
 */
final class PreloadThenHandle implements EventHandler<CommandSlot> {

    private final PreloadStage preload;
    private final HandleStage handle;

    PreloadThenHandle(PreloadStage preload, HandleStage handle) {
        this.preload = preload;
        this.handle = handle;
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        preload.onEvent(slot, sequence, endOfBatch);
        handle.onEvent(slot, sequence, endOfBatch);
    }
}
