package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.EventMessage;

import java.util.ArrayList;
import java.util.List;

/**
 * What the subscribers of one store attempt did that reaches beyond its transaction and cannot be taken back once out:
 * the commands they sent into the ring, and, where nothing can be rolled back, the events they published. Held while
 * the attempt runs, and {@linkplain #release released} in the order they were made only once its transaction committed;
 * {@linkplain #drop dropped} when it was rolled back, so that an attempt tried again (a batch split at a refused
 * command, halved after a failed append, tried again after a deadlock) sends each command once, from the attempt that
 * committed, and a command that failed sends none, as on {@code SimpleCommandBus}, where such a command runs nested in
 * the transaction of the events that caused it and rolls back with them.
 * <p>
 * A held command passed the dispatch interceptors when it was sent (one that refuses it fails the send, as on Axon's
 * buses), and the message monitor when it is released. A dropped command was never sent: the monitor never saw it,
 * its callback is never called (its subscriber is called again in the next attempt, if its command is stored, and sends it
 * again). A command waited for on the store thread ({@code sendAndWait}) is not held: {@link NestedDispatch} runs it
 * in place or refuses it, as before.
 * <p>
 * One per store thread, written and read by that thread alone; bound to it while an attempt runs
 * ({@link #bindToThisThread}, {@link #unbind}), which is how a dispatch on that thread finds it.
 * <p>
 * Tests: {@code behaviour.BatchEffectsTest}.
 */
final class HeldEffects {

    /** A command on its way into the ring, stopped where it would have entered it. */
    private record HeldSend(Dispatches dispatches, CommandMessage<?> command, CommandCallback<Object, Object> callback) {
    }

    /** Events published to a store, whose append waits for the batch's own (see {@link #appendAfterTheBatch}). */
    private record HeldAppend(int slot, RingEventStore store, List<? extends EventMessage<?>> events) {
    }

    // Store thread only. Reused for every attempt; an attempt whose subscribers send nothing allocates nothing here.
    private final ArrayList<HeldSend> sends = new ArrayList<>();
    private final ArrayList<HeldAppend> appends = new ArrayList<>();
    /** True when the events subscribers publish are appended after the batch's (nothing can be rolled back). */
    private boolean appendsHeld;
    /** The index, in the attempt's list, of the command whose subscribers are being called. */
    private int publishingFor;

    /**
     * Holds what the calling thread's subscribers do from now until {@link #unbind}.
     *
     * @param holdAppends true when the events they publish must wait for the batch's own append (the store stage
     *                    calls the subscribers before it, where nothing can be rolled back)
     */
    void bindToThisThread(boolean holdAppends) {
        this.appendsHeld = holdAppends;
        if (Thread.currentThread() instanceof PipelineThreads.PipelineThread thread) {
            thread.heldEffects = this;
        }
    }

    /** What the calling thread does from now on is no longer held. */
    void unbind() {
        if (Thread.currentThread() instanceof PipelineThreads.PipelineThread thread && thread.heldEffects == this) {
            thread.heldEffects = null;
        }
    }

    /** @return true when the calling thread is a store thread in a store attempt, whose sends are held */
    static boolean holding() {
        return Thread.currentThread() instanceof PipelineThreads.PipelineThread thread && thread.heldEffects != null;
    }

    /**
     * Holds a command a subscriber dispatches on the calling thread while one of its store attempts runs
     * ({@link #holding()} must be true).
     *
     * @param dispatches  the way into the ring it was on
     * @param intercepted the command, as the dispatch interceptors left it
     * @param callback    its callback
     */
    static void holdUntilCommit(Dispatches dispatches, CommandMessage<?> intercepted,
                                CommandCallback<Object, Object> callback) {
        ((PipelineThreads.PipelineThread) Thread.currentThread()).heldEffects.sends.add(
                new HeldSend(dispatches, intercepted, callback));
    }

    /**
     * Keeps events a subscriber published on the store thread out of the store until the batch's own events are
     * appended, when the store stage calls the subscribers before the append.
     *
     * @param store  the store they were published to
     * @param events the events, as its dispatch interceptors left them
     * @return true when they are held (appended by {@link #appendAfterTheBatch}), false when they are to be appended
     * now
     */
    static boolean appendAfterTheBatch(RingEventStore store, List<? extends EventMessage<?>> events) {
        if (Thread.currentThread() instanceof PipelineThreads.PipelineThread thread && thread.heldEffects != null
                && thread.heldEffects.appendsHeld) {
            HeldEffects held = thread.heldEffects;
            held.appends.add(new HeldAppend(held.publishingFor, store, List.copyOf(events)));
            return true;
        }
        return false;
    }

    /**
     * @param index the index, in the attempt's list of commands, of the command whose subscribers are called next
     */
    void publishingFor(int index) {
        publishingFor = index;
    }

    /** @return true when subscribers published events whose append waits for the batch's ({@link #appendAfterTheBatch}) */
    boolean holdsAppends() {
        return !appends.isEmpty();
    }

    /**
     * The batch's append when its subscribers published events before it: each command's events, then those its
     * subscribers published, command by command, as {@code SimpleCommandBus} appends them, each command in its own
     * Unit of Work (store thread).
     *
     * @param store the store the batch is appended to
     * @param slots the attempt's commands, in ring order
     */
    void appendInterleaved(RingEventStore store, List<CommandSlot> slots) {
        int next = 0;
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            if (slot.hasEventsToStore()) {
                store.appendStaged(slot.events);
            }
            while (next < appends.size() && appends.get(next).slot() == i) {
                HeldAppend held = appends.get(next++);
                held.store().appendStaged(held.events());
            }
        }
        appends.clear();
    }

    /** The attempt committed: sends the held commands into the ring, in the order they were sent. */
    void release() {
        unbind();
        appends.clear();
        if (sends.isEmpty()) {
            return;
        }
        // Copied out first: a command sent now goes into the ring at once (nothing is bound), and the list is
        // reused by the next attempt.
        HeldSend[] released = sends.toArray(new HeldSend[0]);
        sends.clear();
        for (HeldSend send : released) {
            send.dispatches().admitHeld(send.command(), send.callback());
        }
    }

    /** The attempt was rolled back: what it held is dropped, as if never done. */
    void drop() {
        unbind();
        appends.clear();
        for (int i = 0; i < sends.size(); i++) {
            HeldSend send = sends.get(i);
            TracedCallback.endUnsent(send.callback(), send.command());
        }
        sends.clear();
    }

    /** @return how many commands are held now (for tests) */
    int heldSends() {
        return sends.size();
    }
}
