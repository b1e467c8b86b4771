package io.github.ringbus;

import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.SequenceBarrier;
import org.axonframework.eventsourcing.eventstore.EventStoreException;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * Runs again, in their order, the commands that were handled on top of events the store then refused, so that only
 * the refused command fails, as on {@code SimpleCommandBus} (which handles each command only after the one before
 * it was stored).
 * <p>
 * <b>How.</b> A store thread that meets a command built on a given-up state of its aggregate (the aggregate's
 * generation was poisoned by an earlier refused append: see {@link AggregateHolder}) first finishes everything it
 * holds, so that every earlier command of that aggregate is stored or failed, then asks the aggregate's handler
 * thread for a re-run and waits for it. The handler thread, between two commands (or woken from its wait by the
 * request: {@link ReRunBarrier}), reads the aggregate from the store and handles again, in ring order, every command
 * of that aggregate from the store thread's slot to the last slot it handled, in their own slots, in a new
 * generation. None of those slots can have moved on: the store thread waits at the first of them and every later
 * stage comes after it, and only the handler thread that owns the aggregate writes them. The store thread then
 * stores them as any other command. A command that is not run again (below) stays in the given-up generation and
 * fails as before; the commands after it are run without it, as if it had failed on its own.
 * <p>
 * <b>Not run again</b> (each fails with the store's "handled on top of events ... that failed to be stored"): what
 * {@link StoreRecovery#mayRunAgain} refuses (a command whose run had effects a second run would repeat, or any
 * command where a publish stage runs beside the store), asked by the store thread before it asks here and by the
 * handler thread for each later command of the aggregate; and every command once the bus shuts down. This class is
 * the hand-back only: it decides nothing of its own.
 * <p>
 * Thread-safe: store threads call {@link #reRunFrom}, handler threads serve requests through their
 * {@link ReRunBarrier}. One per bus; the barriers are registered while the stages are wired, before any thread runs.
 * <p>
 * Tests: {@code ReRunBarrierTest}, {@code behaviour.RefusedAppendNeighboursTest},
 * {@code behaviour.AnotherWriterTest}.
 */
final class ReRuns {

    private static final Backoff FOR_RE_RUN = new Backoff(1_000, 100_000);

    private final ReRunBarrier<Request>[] barriers;
    private volatile RingBuffer<CommandSlot> ring;
    private volatile boolean stopping;

    /** @param handlerThreads the number of handler threads (segments) */
    ReRuns(int handlerThreads) {
        @SuppressWarnings("unchecked") // an array of a generic type cannot be made otherwise
        ReRunBarrier<Request>[] none = new ReRunBarrier[handlerThreads];
        this.barriers = none;
    }

    /**
     * Wraps the barrier of the handler thread of {@code segment}; called while the stages are wired.
     *
     * @return the barrier that thread waits on
     */
    ReRunBarrier<Request> barrierFor(int segment, SequenceBarrier ringBarrier) {
        ReRunBarrier<Request> barrier = new ReRunBarrier<>(ringBarrier, this::stopping);
        barriers[segment] = barrier;
        return barrier;
    }

    /** @return the barrier of the handler thread of {@code segment}, or null before wiring */
    ReRunBarrier<Request> barrier(int segment) {
        return barriers[segment];
    }

    void ring(RingBuffer<CommandSlot> ring) {
        this.ring = ring;
    }

    /** @return the ring's slot of {@code sequence} (also how the preload stage looks at the commands behind it) */
    CommandSlot slot(long sequence) {
        return ring.get(sequence);
    }

    /** Called before the stage threads are halted: from now on nothing is run again, and no store thread waits. */
    void stop() {
        stopping = true;
    }

    boolean stopping() {
        return stopping;
    }

    /**
     * Asks the handler thread of the slot's aggregate to run this command and the later ones of its aggregate again,
     * and waits until it did. Store thread only, holding no transaction, and only when every earlier command of the
     * aggregate is stored or failed.
     *
     * Whether it may is the policy's to say ({@link StoreRecovery#mayRunAgain}), asked first.
     *
     * @param slot a command whose aggregate's state it was built on was given up, which the policy lets run again
     * @return true when the command was run again (its outcome is in the slot; its events, if any, are to be stored)
     */
    boolean reRunFrom(CommandSlot slot) {
        AggregateHolder<?> holder = slot.holder;
        if (stopping || holder == null || slot.builtOnGivenUpState() != holder) {
            return false;
        }
        ReRunBarrier<Request> barrier = barriers[slot.segment];
        if (barrier == null) {
            return false;
        }
        Request request = new Request(holder, slot.sequence);
        barrier.post(request);
        int attempt = 0;
        while (!request.finished()) {
            if (stopping && request.cancel()) {
                return false;
            }
            FOR_RE_RUN.idle(attempt++);
        }
        return request.ranAgain() && slot.builtOnGivenUpState() == null;
    }

    /**
     * Why a command's last run is discarded, for its Unit of Work's rollback handlers.
     */
    static EventStoreException discardedRun(CommandSlot slot, AggregateHolder<?> holder) {
        return new EventStoreException(
                "Command [" + slot.commandName() + "] was handled on top of events of aggregate ["
                        + holder.identifier() + "] that failed to be stored; that run is discarded, and the command "
                        + "is handled again on the aggregate as stored");
    }

    /**
     * One store thread's request to a handler thread: run the commands of {@code holder}'s aggregate again from ring
     * sequence {@code from}. Its state goes from {@code PENDING} to {@code RUNNING} (the handler thread took it) to
     * {@code DONE} or {@code DECLINED}, or from {@code PENDING} to {@code CANCELLED} (the bus stops). Release on each
     * change, acquire on each read: the store thread that sees it finished sees the slots the handler thread wrote.
     */
    static final class Request {

        private static final int PENDING = 0;
        private static final int RUNNING = 1;
        private static final int DONE = 2;
        private static final int DECLINED = 3;
        private static final int CANCELLED = 4;
        private static final VarHandle STATE;

        static {
            try {
                STATE = MethodHandles.lookup().findVarHandle(Request.class, "state", int.class);
            } catch (ReflectiveOperationException e) {
                throw new ExceptionInInitializerError(e);
            }
        }

        final AggregateHolder<?> holder;
        final long from;
        @SuppressWarnings("unused") // through STATE
        private int state;

        Request(AggregateHolder<?> holder, long from) {
            this.holder = holder;
            this.from = from;
        }

        /** Handler thread: takes the request on; false when it was cancelled. */
        boolean start() {
            return STATE.compareAndSet(this, PENDING, RUNNING);
        }

        /** Handler thread: the commands were run again (true) or could not be (false). */
        void finish(boolean ranAgain) {
            STATE.setRelease(this, ranAgain ? DONE : DECLINED);
        }

        /** Store thread: gives up a request no handler thread took on; false when one has. */
        boolean cancel() {
            return STATE.compareAndSet(this, PENDING, CANCELLED);
        }

        boolean finished() {
            int current = (int) STATE.getAcquire(this);
            return current == DONE || current == DECLINED || current == CANCELLED;
        }

        boolean ranAgain() {
            return (int) STATE.getAcquire(this) == DONE;
        }
    }
}
