package io.github.ringbus;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.Sequence;

import java.util.ArrayList;

/**
 * {@link Topology#COMPACT}'s second thread: stores the events of a batch of handled commands (one append, one
 * transaction, as the store stage does on its own thread), then publishes them to subscribers when the publish mode
 * asks for a publish stage, then completes each command of the batch, in ring order.
 * <p>
 * A command completes only after the store stage has flushed the batch holding its events: the slots of a batch wait
 * in {@link #stored} until the Disruptor's end of batch, when the store stage flushes.
 */
final class StoreThenComplete implements EventHandler<CommandSlot> {

    private final EventHandler<CommandSlot> store;
    /** Null when the store stage calls the subscribers itself (or the event store is not a RingEventStore). */
    private final EventHandler<CommandSlot> publish;
    private final EventHandler<CommandSlot> complete;
    /** The slots of the current batch, stored but not yet completed; reused, so the hot path allocates nothing. */
    private final ArrayList<CommandSlot> stored;
    private final long[] sequences;
    private int pending;

    /**
     * @param store    the store stage, in its {@link StageGuard}
     * @param publish  the publish stage, in its {@link StageGuard}, or null
     * @param complete the complete stage, in its {@link StageGuard}
     * @param ringSize the ring's size: the most slots one batch holds
     */
    StoreThenComplete(EventHandler<CommandSlot> store, EventHandler<CommandSlot> publish,
                      EventHandler<CommandSlot> complete, int ringSize) {
        this.store = store;
        this.publish = publish;
        this.complete = complete;
        this.stored = new ArrayList<>(ringSize);
        this.sequences = new long[ringSize];
    }

    @Override
    public void setSequenceCallback(Sequence sequenceCallback) {
        // This thread's sequence is the one dispatchers wait for: the complete stage's.
        complete.setSequenceCallback(sequenceCallback);
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) throws Exception {
        store.onEvent(slot, sequence, endOfBatch);
        stored.add(slot);
        sequences[pending++] = sequence;
        if (!endOfBatch) {
            return;
        }
        try {
            for (int i = 0; i < pending; i++) {
                CommandSlot done = stored.get(i);
                boolean last = i == pending - 1;
                if (publish != null) {
                    publish.onEvent(done, sequences[i], last);
                }
                complete.onEvent(done, sequences[i], last);
            }
        } finally {
            stored.clear();
            pending = 0;
        }
    }
}
