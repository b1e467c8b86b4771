package io.github.ringbus;

import com.lmax.disruptor.AlertException;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.TimeoutException;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;

/**
 * The barrier a handler thread waits on: the ring's own, and a mailbox through which store threads hand it
 * {@link ReRuns re-runs}. A request wakes the thread however it waits (any wait strategy checks the barrier's
 * alert): its wait then ends with the Disruptor's {@link TimeoutException}, on which the processor calls the
 * handler's {@code onTimeout}, where the handler thread serves the request; a busy handler thread serves it at its
 * next batch. Nothing of this runs while no request is pending but one read of the mailbox per wait.
 * <p>
 * The alert is also how the Disruptor halts a processor. A request sets {@link #nudged} before it alerts, so an alert
 * with no nudge is a halt and goes through; and the alert cleared for a nudge is raised again once the bus stops
 * (the stop flag is set before the halt), so a halt that came with a nudge is not lost.
 * <p>
 * Knows nothing of what a request is ({@code R}: {@link ReRuns}'s own): {@link ReRuns} uses it, not the other way.
 *
 * @param <R> the requests it carries
 */
final class ReRunBarrier<R> implements SequenceBarrier {

    private final SequenceBarrier ring;
    private final BooleanSupplier stopping;
    private final ConcurrentLinkedQueue<R> requests = new ConcurrentLinkedQueue<>();
    private final AtomicBoolean nudged = new AtomicBoolean();

    ReRunBarrier(SequenceBarrier ring, BooleanSupplier stopping) {
        this.ring = ring;
        this.stopping = stopping;
    }

    /** Store thread: hands a request to the handler thread and wakes it. */
    void post(R request) {
        requests.add(request);
        nudged.set(true);
        ring.alert();
    }

    /** Handler thread: the next request, or null. */
    R poll() {
        return requests.poll();
    }

    @Override
    public long waitFor(long sequence) throws AlertException, InterruptedException, TimeoutException {
        while (true) {
            if (!requests.isEmpty()) {
                throw TimeoutException.INSTANCE;
            }
            try {
                return ring.waitFor(sequence);
            } catch (AlertException alert) {
                if (!nudged.getAndSet(false)) {
                    throw alert;
                }
                ring.clearAlert();
                if (stopping.getAsBoolean()) {
                    ring.alert();
                }
            }
        }
    }

    @Override
    public long getCursor() {
        return ring.getCursor();
    }

    @Override
    public boolean isAlerted() {
        return ring.isAlerted();
    }

    @Override
    public void alert() {
        ring.alert();
    }

    @Override
    public void clearAlert() {
        ring.clearAlert();
    }

    @Override
    public void checkAlert() throws AlertException {
        ring.checkAlert();
    }
}
