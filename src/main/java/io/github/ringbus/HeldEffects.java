package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;

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
 * buses); once released it is handed to the bus's callback thread, which passes it through the message monitor into
 * the ring and may wait for a free slot (a store thread may not: a held command must not fail for a full ring where
 * its sender would have waited). A dropped command was never sent: the monitor never saw it, its callback is never
 * called (its subscriber is called again in the next attempt, if its command is stored, and sends it again). A command
 * waited for on the store thread ({@code sendAndWait}) is not held: {@link NestedDispatch} runs it in place or refuses
 * it.
 * <p>
 * A send is held when the root of the sender's current Unit of Work is a {@link StoreUnitOfWork}
 * ({@link StoreUnitOfWork#heldByCurrent}): the store stage calls the subscribers in one, and a subscribing processor's
 * Unit of Work nests in it. One per store thread, written and read by that thread alone.
 * <p>
 * Tests: {@code behaviour.BatchEffectsTest}, {@code postgres.PostgresBatchEffectsTest}.
 */
final class HeldEffects {

    /** The way a held command goes on into the ring once released (the bus's dispatch, after the interceptors). */
    @FunctionalInterface
    interface Admission {
        void admit(CommandMessage<?> intercepted, CommandCallback<Object, Object> callback);
    }

    /** A command on its way into the ring, stopped where it would have entered it. */
    private record HeldSend(Admission admission, CommandMessage<?> command, CommandCallback<Object, Object> callback) {
    }

    /** Events published to a store, whose append waits for the batch's own (see {@link #appendInterleaved}). */
    private record HeldAppend(int slot, RingEventStore store, List<? extends EventMessage<?>> events) {
    }

    // Store thread only. Reused for every attempt; an attempt whose subscribers send nothing allocates nothing here.
    private final ArrayList<HeldSend> sends = new ArrayList<>();
    private final ArrayList<HeldAppend> appends = new ArrayList<>();
    /** True when the events subscribers publish are appended after the batch's (nothing can be rolled back). */
    private boolean appendsHeld;
    /** The index, in the attempt's list, of the command whose subscribers are being called. */
    private int publishingFor;
    /** True from the attempt's begin until it is released or dropped: after-commit handlers send at once. */
    private boolean open;

    /** @return true from the attempt's begin until it is released or dropped */
    boolean isOpen() {
        return open;
    }

    /**
     * An attempt begins.
     *
     * @param holdAppends true when the events the subscribers publish must wait for the batch's own append (the
     *                    store stage calls the subscribers before it, where nothing can be rolled back)
     */
    void begin(boolean holdAppends) {
        this.appendsHeld = holdAppends;
        this.publishingFor = 0;
        this.open = true;
    }

    /**
     * Holds a command a subscriber sends until its attempt ends.
     *
     * @param admission   the way into the ring it was on
     * @param intercepted the command, as the dispatch interceptors left it
     * @param callback    its callback
     */
    void holdUntilCommit(Admission admission, CommandMessage<?> intercepted, CommandCallback<Object, Object> callback) {
        sends.add(new HeldSend(admission, intercepted, callback));
    }

    /**
     * Keeps events a subscriber published out of the store until the batch's own events are appended, when the store
     * stage calls the subscribers before the append.
     *
     * @return true when they are held (appended by {@link #appendInterleaved}), false when they are to be appended now
     */
    boolean deferAppend(EventStore store, List<? extends EventMessage<?>> events) {
        if (!open || !appendsHeld || !(store instanceof RingEventStore ring)) {
            return false;
        }
        appends.add(new HeldAppend(publishingFor, ring, List.copyOf(events)));
        return true;
    }

    /**
     * @param index the index, in the attempt's list of commands, of the command whose subscribers are called next
     */
    void publishingFor(int index) {
        publishingFor = index;
    }

    /** @return true when subscribers published events whose append waits for the batch's ({@link #deferAppend}) */
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
        open = false;
        appends.clear();
        // Handing over adds nothing to this list (the callback thread admits them), so it is walked in place.
        for (int i = 0; i < sends.size(); i++) {
            HeldSend send = sends.get(i);
            send.admission().admit(send.command(), send.callback());
        }
        sends.clear();
    }

    /** The attempt was rolled back: what it held is dropped, as if never done. */
    void drop() {
        open = false;
        appends.clear();
        for (int i = 0; i < sends.size(); i++) {
            HeldSend send = sends.get(i);
            TracedCallback.endUnsent(send.callback(), send.command());
        }
        sends.clear();
    }
}
