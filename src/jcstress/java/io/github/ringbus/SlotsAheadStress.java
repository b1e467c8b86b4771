package io.github.ringbus;

import com.lmax.disruptor.RingBuffer;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.monitoring.NoOpMessageMonitorCallback;
import org.openjdk.jcstress.annotations.Actor;
import org.openjdk.jcstress.annotations.JCStressTest;
import org.openjdk.jcstress.annotations.Outcome;
import org.openjdk.jcstress.annotations.State;
import org.openjdk.jcstress.infra.results.I_Result;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * A handler thread looks at the commands published after the one it handles ({@link Pipeline#anyPublishedAfter}),
 * to run a nested command in place only if none of its aggregate is ahead of it, while a dispatcher fills and
 * publishes the next slot. On a real ring of four slots: slot 0 is being handled, slot 1 is claimed and filled by the
 * dispatcher at the same time. Before its fill slot 1 holds a stale command (a cleared slot holds none; a recognisable
 * one here, so that reading it shows), and the fill itself first empties the slot. The handler must see either
 * nothing published yet, or the new command; never a published slot with the stale command or an empty one.
 * Checked to fail (both forbidden outcomes, hundreds of thousands of times) when the scan reads a slot without asking
 * the ring whether it is published.
 */
@JCStressTest
@Outcome(id = "0", expect = ACCEPTABLE, desc = "Slot 1 not yet published: nothing ahead.")
@Outcome(id = "1", expect = ACCEPTABLE, desc = "Slot 1 published: the handler read the command just dispatched.")
@Outcome(id = "2", expect = FORBIDDEN, desc = "Slot 1 published, but its command read was empty: the fill was not seen.")
@Outcome(id = "3", expect = FORBIDDEN, desc = "Slot 1 published, but its command read was an earlier lap's.")
@Outcome(expect = FORBIDDEN, desc = "Anything else.")
@State
public class SlotsAheadStress {

    private final RingBuffer<CommandSlot> ring = RingBuffer.createMultiProducer(() -> new CommandSlot(null), 4);
    private final CommandMessage<?> dispatched = GenericCommandMessage.asCommandMessage("dispatched now");
    private final CommandMessage<?> earlierLap = GenericCommandMessage.asCommandMessage("an earlier lap's");
    private final long next;

    public SlotsAheadStress() {
        long handled = ring.next(); // sequence 0: the command being handled
        fill(handled, GenericCommandMessage.asCommandMessage("being handled"));
        ring.publish(handled);
        next = ring.next(); // sequence 1: claimed; its slot still shows an earlier lap's command, then cleared
        fill(next, earlierLap);
        ring.get(next).clear();
        ring.get(next).command = earlierLap; // stale, and recognisable
    }

    @SuppressWarnings("unchecked")
    private void fill(long sequence, CommandMessage<?> command) {
        ring.get(sequence).fill(sequence, command,
                                (CommandCallback<Object, Object>) (CommandCallback<?, ?>) (c, r) -> {
                                }, NoOpMessageMonitorCallback.INSTANCE);
    }

    @Actor
    public void dispatcher() {
        fill(next, dispatched);
        ring.publish(next);
    }

    @Actor
    public void handlerThread(I_Result result) {
        int[] seen = {0};
        Pipeline.anyPublishedAfter(ring, 0, command -> {
            seen[0] = command == dispatched ? 1 : command == null ? 2 : 3;
            return true;
        });
        result.r1 = seen[0];
    }
}
