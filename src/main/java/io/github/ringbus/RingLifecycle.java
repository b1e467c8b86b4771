package io.github.ringbus;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.concurrent.atomic.LongAdder;

/**
 * The bus's lifecycle, one state machine with one owner:
 * <pre>
 *   NEW --start--&gt; RUNNING --shutdown--&gt; DRAINING --stages ended--&gt; HALTED --rest completed--&gt; STOPPED
 *    |                                                                                           ^
 *    +---------------------------------------shutdown--------------------------------------------+
 * </pre>
 * It is also the gate of the ring. A dispatcher {@link #enter()}s before it claims a slot and {@link #exit()}s after
 * handing the slot over (or giving up); only {@code RUNNING} lets it in. Shutdown closes the gate (leaves
 * {@code RUNNING}), waits until no dispatcher is inside, lets the ring drain and stops the stage threads, and then
 * completes what is left, so every callback fires exactly once and no command is handed to a ring whose threads ended.
 * <p>
 * The gate is Dekker's handshake: a dispatcher raises the count of dispatchers inside before it reads the state;
 * shutdown writes the state before it reads the count. Volatile accesses are sequentially consistent, so either the
 * dispatcher sees the gate closed and backs out, or shutdown sees it inside and waits for it. The count is a
 * {@link LongAdder}: striped over padded cells, so dispatchers on different cores do not contend on one cache line.
 * {@code RingLifecycleStress} (jcstress) checks the handshake.
 * <p>
 * Threads: {@link #enter()}, {@link #exit()} and the queries from any thread; {@link #start()} and {@link #shutdown()}
 * are serialized with each other, and shutdown must not run on a stage thread (it waits for them): a stage thread
 * calls {@link #shutdownAfterThisStage} instead.
 */
final class RingLifecycle {

    /** The bus's own logger: its shutdown line is the bus's, wherever the code that writes it lives. */
    private static final org.slf4j.Logger logger = org.slf4j.LoggerFactory.getLogger("io.github.ringbus.RingCommandBus");

    /** Where the bus is in its life. */
    enum State {
        /** Built, not started: dispatches are refused. */
        NEW,
        /** Stage threads running; dispatches are let in. */
        RUNNING,
        /** Shutting down: the gate is closed, the ring drains, the stage threads still run. */
        DRAINING,
        /** The stage threads have ended: no slot will be freed again, so dispatchers waiting for one give up. */
        HALTED,
        /** Shut down; a bus cannot be restarted. */
        STOPPED
    }

    private static final VarHandle STATE;

    static {
        try {
            STATE = MethodHandles.lookup().findVarHandle(RingLifecycle.class, "state", State.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private final LongAdder inside = new LongAdder();
    /** Written by compare-and-set only, since {@link #closeGate()} may run on a stage thread, outside the monitor. */
    private volatile State state = State.NEW;
    /** Whether {@link #start()} started the stage threads; guarded by this. */
    private boolean stagesStarted;
    private final RingStages stages;
    private final long shutdownTimeoutNanos;
    private final Runnable afterStop;

    /**
     * @param stages          the stage threads
     * @param shutdownTimeout how long shutdown waits for dispatchers and the ring
     * @param afterStop       what else stops with the bus (runs once, on the shutting-down thread, after the ring)
     */
    RingLifecycle(RingStages stages, Duration shutdownTimeout, Runnable afterStop) {
        this.stages = stages;
        this.shutdownTimeoutNanos = shutdownTimeout.toNanos();
        this.afterStop = afterStop;
    }

    /**
     * Lets a dispatcher in; one that got in must {@link #exit()} after handing its slot over (or giving up).
     *
     * @return true when the bus runs and the caller is inside; false when it is not running (nothing to exit)
     */
    boolean enter() {
        inside.increment();
        if (state == State.RUNNING) {
            return true;
        }
        inside.decrement();
        return false;
    }

    /** Leaves after a successful {@link #enter()}. */
    void exit() {
        inside.decrement();
    }

    /**
     * @return the current state
     */
    State state() {
        return state;
    }

    /**
     * @return true unless the stage threads have ended, after which no slot is freed again
     */
    boolean slotsMayFree() {
        return state.compareTo(State.HALTED) < 0;
    }

    /**
     * Starts the stage threads and opens the gate. Does nothing when running.
     *
     * @throws IllegalStateException when the bus was shut down (a bus cannot be restarted)
     */
    synchronized void start() {
        if (state == State.RUNNING) {
            return;
        }
        if (state != State.NEW) {
            throw new IllegalStateException("RingCommandBus was shut down and cannot be restarted");
        }
        stagesStarted = true;
        stages.start();
        // Fails only when a stage thread began a shutdown already (see shutdownAfterThisStage): the gate stays shut.
        STATE.compareAndSet(this, State.NEW, State.RUNNING);
    }

    /**
     * Closes the gate, waits (within the shutdown timeout) for the dispatchers inside to leave and for the ring to
     * drain, stops the stage threads, and completes whatever is left. Does nothing when stopped.
     */
    synchronized void shutdown() {
        if (state == State.STOPPED) {
            return;
        }
        closeGate();
        if (stagesStarted) {
            long deadline = System.nanoTime() + shutdownTimeoutNanos;
            Backoff.FOR_SHUTDOWN.awaitUntil(this::nobodyInside, deadline);
            try {
                stages.drainAndStop(Math.max(0, deadline - System.nanoTime()));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            // No slot will be freed any more: dispatchers still waiting for one give up and leave.
            STATE.setVolatile(this, State.HALTED);
            Backoff.FOR_SHUTDOWN.await(this::nobodyInside);
            stages.completeUnfinished();
        }
        afterStop.run();
        STATE.setVolatile(this, State.STOPPED);
    }

    /**
     * A shutdown asked for by the application: on a stage thread {@link #shutdownAfterThisStage}, elsewhere
     * {@link #shutdown()} with a line in the log saying how long it took and how many commands it drained. Does nothing
     * when stopped.
     *
     * @param finisherName the name of the thread that finishes a shutdown asked for on a stage thread
     * @param inTheRing    how many commands are in the ring now
     */
    void shutdownAsked(String finisherName, java.util.function.LongSupplier inTheRing) {
        if (PipelineThreads.isPipelineThread()) {
            logger.info("RingCommandBus shutdown asked for on its pipeline thread [{}]: new commands are refused from "
                                + "now on, and the ring drains once that thread's code returns",
                        Thread.currentThread().getName());
            shutdownAfterThisStage(finisherName);
            return;
        }
        if (state == State.STOPPED) {
            return;
        }
        long began = System.nanoTime();
        long commands = inTheRing.getAsLong();
        shutdown();
        logger.info("RingCommandBus shut down in {} ms: {} command(s) were in the ring when shutdown began, each "
                            + "completed once; new commands are refused", (System.nanoTime() - began) / 1_000_000,
                    commands);
    }

    /**
     * Begins a shutdown asked for on a stage thread (by a handler, a subscriber or a callback), which cannot wait for
     * the ring to drain: the ring would wait for that very thread. The gate closes now, so new commands are refused
     * from this call on; the rest of {@link #shutdown()} runs on a thread of its own, which waits for the ring to
     * drain, this thread's command included, once the calling stage returns. Returns at once.
     *
     * @param threadName the name of the thread that finishes the shutdown
     */
    void shutdownAfterThisStage(String threadName) {
        closeGate();
        Thread finisher = new Thread(this::shutdown, threadName);
        // Not a daemon: the JVM waits for the ring to drain (at most the shutdown timeout) before it exits.
        finisher.setDaemon(false);
        finisher.start();
    }

    /**
     * Refuses the dispatchers that have not entered yet: the state leaves {@code NEW} or {@code RUNNING} for
     * {@code DRAINING}, and never goes back. Shutdown's first step, safe from any thread; separate for its jcstress
     * test.
     */
    void closeGate() {
        State current;
        while ((current = state) == State.NEW || current == State.RUNNING) {
            if (STATE.compareAndSet(this, current, State.DRAINING)) {
                return;
            }
        }
    }

    /**
     * @return true when no dispatcher is inside; after {@link #closeGate()}, once true it stays true
     */
    boolean nobodyInside() {
        return inside.sum() == 0;
    }
}
