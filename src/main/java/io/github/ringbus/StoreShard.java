package io.github.ringbus;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.Sequence;

import java.util.ArrayList;

/**
 * One store thread: stores the events of its shard's commands (one append, one transaction per batch, as
 * {@link StoreStage} does), then hands them to subscribers when the publish mode asks for a publish stage, then
 * completes each of its commands, in ring order.
 * <p>
 * Used in two shapes. {@link Topology#COMPACT}'s second thread is the only shard: every slot is its own. With several
 * store threads ({@code storeThreads} &gt; 1, topology {@link Topology#FULL}) each shard takes the slots whose
 * {@link CommandSlot#storeShard} is its index, one shard per share of the aggregates: every aggregate's events go
 * through one shard, in ring order, in that shard's transactions (its own connection), so shards commit side by
 * side, and a shard completes its commands as soon as its own commit returned, whatever the other shards are doing.
 * A slot of another shard is never written, only its shard read; the ring reuses a slot once every shard has passed
 * it.
 * <p>
 * A command completes only after the store stage has flushed the batch holding its events: the slots of a batch wait
 * in {@link #stored} until the Disruptor's end of batch, when the store stage flushes.
 * <p>
 * Tests: {@code postgres.PostgresStoreShardsTest}, {@code StagePlanTest}.
 */
final class StoreShard implements EventHandler<CommandSlot> {

    private final int shard;
    private final int shards;
    /** The store stage itself, to end a batch that ends on another shard's slot. */
    private final StoreStage storeStage;
    /** The store stage, in its {@link StageGuard}. */
    private final EventHandler<CommandSlot> store;
    /** Null when the store stage calls the subscribers itself (or the event store is not a RingEventStore). */
    private final EventHandler<CommandSlot> publish;
    private final EventHandler<CommandSlot> complete;
    /** The slots of the current batch, stored but not yet completed; reused, so the hot path allocates nothing. */
    private final ArrayList<CommandSlot> stored;
    private final long[] sequences;
    private int pending;

    /**
     * @param shard      this shard's index, in {@code [0, shards)}
     * @param shards     the number of shards
     * @param storeStage this shard's own store stage
     * @param store      the same store stage, in its {@link StageGuard}
     * @param publish    this shard's publish stage, in its {@link StageGuard}, or null
     * @param complete   this shard's complete stage, in its {@link StageGuard}
     * @param ringSize   the ring's size: the most slots one batch holds
     */
    StoreShard(int shard, int shards, StoreStage storeStage, EventHandler<CommandSlot> store,
               EventHandler<CommandSlot> publish, EventHandler<CommandSlot> complete, int ringSize) {
        this.shard = shard;
        this.shards = shards;
        this.storeStage = storeStage;
        this.store = store;
        this.publish = publish;
        this.complete = complete;
        this.stored = new ArrayList<>(ringSize);
        this.sequences = new long[ringSize];
    }

    @Override
    public void setSequenceCallback(Sequence sequenceCallback) {
        // This thread's sequence is one that dispatchers wait for: its complete stage's.
        complete.setSequenceCallback(sequenceCallback);
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) throws Exception {
        if (shards == 1 || slot.storeShard == shard) {
            store.onEvent(slot, sequence, false);
            stored.add(slot);
            sequences[pending++] = sequence;
        }
        if (!endOfBatch) {
            return;
        }
        storeStage.endBatch();
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
