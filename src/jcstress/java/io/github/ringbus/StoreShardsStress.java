package io.github.ringbus;

import com.lmax.disruptor.InsufficientCapacityException;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.Sequence;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.monitoring.NoOpMessageMonitorCallback;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.Arbiter;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.IIII_Result;

import java.util.concurrent.atomic.AtomicInteger;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * Two store shards on one slot (see {@link StoreShard}): the slot's own shard completes and clears it while the other
 * shard reads its {@link CommandSlot#storeShard} to learn that it is not its own. Then (the arbiter) a dispatcher gets
 * the slot for its next command, the ring being gated by both shards' sequences, as the Disruptor gates it on the last
 * stages. Two actors, so that it runs on two cores.
 */
@JCStressTest
@Outcome(id = "1, 0, 1, 1", expect = ACCEPTABLE,
         desc = "Only the owning shard completed the command; the dispatcher then got the slot.")
@Outcome(id = ".*, 1, .*, .*", expect = FORBIDDEN,
         desc = "The other shard took the slot for its own (it read a shard the owner's clear had left behind).")
@Outcome(expect = FORBIDDEN, desc = "Anything else: the command not completed, completed twice, or the slot held.")
@State
public class StoreShardsStress {

    private static final int OWNER = 1;
    private static final int OTHER = 0;

    private final RingBuffer<CommandSlot> ring = RingBuffer.createMultiProducer(() -> new CommandSlot(null), 1);
    private final Sequence ownerPassed = new Sequence(-1);
    private final Sequence otherPassed = new Sequence(-1);
    private final AtomicInteger callbacks = new AtomicInteger();
    private final CommandMessage<?> first = GenericCommandMessage.asCommandMessage("first");

    public StoreShardsStress() {
        ring.addGatingSequences(ownerPassed, otherPassed);
        long sequence = ring.next();
        CommandSlot slot = ring.get(sequence);
        fill(slot, first);
        slot.storeShard = OWNER; // as the handle stage sets it
        ring.publish(sequence);
    }

    @SuppressWarnings("unchecked")
    private void fill(CommandSlot slot, CommandMessage<?> command) {
        slot.fill(0, command, (CommandCallback<Object, Object>) (CommandCallback<?, ?>) (c, result) -> {
            if (c == first) {
                callbacks.incrementAndGet();
            }
        }, NoOpMessageMonitorCallback.INSTANCE);
    }

    /** What a shard's thread does with slot 0 (StoreShard.onEvent): its own slot is completed, then it moves on. */
    private int shardReaches(int shard, Sequence passed) {
        CommandSlot slot = ring.get(0);
        int mine = slot.storeShard == shard ? 1 : 0;
        if (mine == 1) {
            CompleteStage.complete(slot, PipelineMonitor.NONE, SlotHandOffStress.NOT_STARTED);
        }
        passed.set(0);
        return mine;
    }

    @Actor
    public void owningShard(IIII_Result r) {
        r.r1 = shardReaches(OWNER, ownerPassed);
    }

    @Actor
    public void otherShard(IIII_Result r) {
        r.r2 = shardReaches(OTHER, otherPassed);
    }

    @Arbiter
    public void check(IIII_Result r) {
        r.r4 = callbacks.get();
        try {
            // Both shards passed: the slot is free for the dispatcher's next command.
            long sequence = ring.tryNext();
            ring.get(sequence).storeShard = OTHER; // as the next command's handle stage may set it
            ring.publish(sequence);
            r.r3 = 1;
        } catch (InsufficientCapacityException full) {
            r.r3 = 0;
        }
    }
}
