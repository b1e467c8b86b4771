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
import org.openjdk.jcstress.infra.results.III_Result;
import org.openjdk.jcstress.infra.results.II_Result;

import java.util.concurrent.atomic.AtomicInteger;

import static org.openjdk.jcstress.annotations.Expect.ACCEPTABLE;
import static org.openjdk.jcstress.annotations.Expect.FORBIDDEN;

/**
 * A slot's end: the complete stage finishes the command in it ({@link CompleteStage#complete}: callback, then
 * {@link CommandSlot#clear()}) and then advances its sequence, which frees the slot for the next dispatcher and tells
 * a shutdown that the ring has drained. On a real ring of one slot.
 */
public final class SlotHandOffStress {

    /** Never started: a callback handed to it is called on the completing thread, which these tests observe. */
    static final CallbackThread NOT_STARTED = new CallbackThread("not-started");

    private SlotHandOffStress() {
    }

    /** A ring of one slot whose slot 0 holds a command handed over and not yet completed. */
    static final class OneSlotRing {

        final RingBuffer<CommandSlot> ring = RingBuffer.createMultiProducer(() -> new CommandSlot(null), 1);
        final Sequence completed = new Sequence(-1);
        final AtomicInteger callbacks = new AtomicInteger();
        final CommandMessage<?> first = GenericCommandMessage.asCommandMessage("first");
        final CommandMessage<?> second = GenericCommandMessage.asCommandMessage("second");

        OneSlotRing() {
            ring.addGatingSequences(completed);
            long sequence = ring.next();
            fill(ring.get(sequence), first);
            ring.publish(sequence);
        }

        @SuppressWarnings("unchecked")
        void fill(CommandSlot slot, CommandMessage<?> command) {
            slot.fill(0, command, (CommandCallback<Object, Object>) (CommandCallback<?, ?>) (c, result) -> {
                if (c == first) {
                    callbacks.incrementAndGet();
                }
            }, NoOpMessageMonitorCallback.INSTANCE);
        }

        /** What the complete stage's thread does with sequence 0: the Disruptor sets the sequence after onEvent. */
        void completeFirst() {
            CompleteStage.complete(ring.get(0), PipelineMonitor.NONE, NOT_STARTED);
            completed.set(0);
        }
    }

    @JCStressTest
    @Outcome(id = "0, 1, 1", expect = ACCEPTABLE, desc = "Ring still full: the dispatcher is refused the slot.")
    @Outcome(id = "1, 1, 1", expect = ACCEPTABLE,
             desc = "The dispatcher got the freed slot, found it cleared, and its command survived.")
    @Outcome(id = "1, 0, .*", expect = FORBIDDEN,
             desc = "The dispatcher got the slot while it still held the finished command's state.")
    @Outcome(id = "1, .*, 0", expect = FORBIDDEN,
             desc = "The finished command's clear wiped the next command out of the slot: it would be lost.")
    @Outcome(expect = FORBIDDEN, desc = "Anything else.")
    @State
    public static class SlotReusedOnlyAfterCompletion {

        private final OneSlotRing ring = new OneSlotRing();

        @Actor
        public void completeStage() {
            ring.completeFirst();
        }

        @Actor
        public void dispatcher(III_Result r) {
            long sequence;
            try {
                sequence = ring.ring.tryNext();
            } catch (InsufficientCapacityException full) {
                r.r1 = 0;
                r.r2 = 1;
                r.r3 = 1;
                return;
            }
            CommandSlot slot = ring.ring.get(sequence);
            r.r1 = 1;
            r.r2 = slot.command == null && slot.callback == null && slot.events.isEmpty() ? 1 : 0;
            ring.fill(slot, ring.second);
            ring.ring.publish(sequence);
        }

        @Arbiter
        public void check(III_Result r) {
            if (r.r1 == 1) {
                r.r3 = ring.ring.get(1).command == ring.second ? 1 : 0;
            }
        }
    }

    /**
     * A shutdown that gave up waiting for the complete stage's thread (held by user code) finishes the slot itself,
     * while that thread, let go, reaches the same slot: {@link CompleteStage#abandon} on the shutting-down thread
     * against {@link CompleteStage#complete} on the stage's. The slot's completion claim lets exactly one of them call
     * the callback; the loser reads nothing of the slot (the winner may be clearing it).
     */
    @JCStressTest
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "The complete stage won: the callback got the command's result.")
    @Outcome(id = "1, 2", expect = ACCEPTABLE, desc = "The shutdown won: the callback got the shutdown's failure.")
    @Outcome(id = "2, .*", expect = FORBIDDEN, desc = "The callback was called twice.")
    @Outcome(id = "0, .*", expect = FORBIDDEN, desc = "Neither called the callback.")
    @Outcome(expect = FORBIDDEN, desc = "Anything else (a loser that failed on a cleared slot).")
    @State
    public static class CompletionClaimedOnce {

        private final CommandSlot slot = new CommandSlot(null);
        private final AtomicInteger calls = new AtomicInteger();
        /** 1 when the callback saw a result, 2 when it saw the shutdown's failure. */
        private volatile int seen;
        private volatile boolean broken;

        @SuppressWarnings("unchecked")
        public CompletionClaimedOnce() {
            slot.fill(0, GenericCommandMessage.asCommandMessage("command"),
                      (CommandCallback<Object, Object>) (CommandCallback<?, ?>) (command, result) -> {
                          calls.incrementAndGet();
                          seen = result.isExceptional() ? 2 : 1;
                      }, NoOpMessageMonitorCallback.INSTANCE);
        }

        @Actor
        public void completeStage() {
            try {
                CompleteStage.complete(slot, PipelineMonitor.NONE, NOT_STARTED);
            } catch (RuntimeException e) {
                broken = true;
            }
        }

        @Actor
        public void shutdown() {
            try {
                CompleteStage.abandon(slot, name -> new IllegalStateException("shut down before " + name),
                                      NOT_STARTED);
            } catch (RuntimeException e) {
                broken = true;
            }
        }

        @Arbiter
        public void check(II_Result r) {
            r.r1 = broken ? -1 : calls.get();
            r.r2 = seen;
        }
    }

    @JCStressTest
    @Outcome(id = "0, 0", expect = ACCEPTABLE, desc = "Not drained yet: shutdown keeps waiting.")
    @Outcome(id = "0, 1", expect = ACCEPTABLE, desc = "Callback done, sequence not yet seen: keeps waiting.")
    @Outcome(id = "1, 1", expect = ACCEPTABLE, desc = "Drained, and the callback has run.")
    @Outcome(id = "1, 0", expect = FORBIDDEN,
             desc = "Shutdown sees the ring drained before the command's callback ran: it would stop the threads "
                     + "and complete the command a second time, or never.")
    @State
    public static class DrainSeesEveryCallback {

        private final OneSlotRing ring = new OneSlotRing();

        @Actor
        public void completeStage() {
            ring.completeFirst();
        }

        @Actor
        public void shutdown(II_Result r) {
            // Pipeline.drainAndStop's condition, read once.
            r.r1 = ring.completed.get() >= ring.ring.getCursor() ? 1 : 0;
            r.r2 = ring.callbacks.get();
        }
    }
}
