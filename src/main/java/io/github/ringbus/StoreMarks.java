package io.github.ringbus;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;

/**
 * What the store threads tell the handler thread of one aggregate ({@link AggregateHolder}): how far its events are
 * known to be stored, and the highest generation of its in-memory state that was given up. The one part of a holder
 * that crosses threads.
 * <p>
 * Written by the store thread that stores the aggregate's events (and, for the generation, by the handler thread
 * when it gives up a generation itself before handling its commands again); read by the handler thread. Every write
 * is a release, every read an acquire: whoever sees a mark also sees what its writer did before it (the append that
 * stored the events, the failed append's bookkeeping). {@code AggregateHolderStress} (jcstress) holds the stored
 * mark's ordering.
 * <p>
 * Tests: {@code AggregateHolderTest}, {@code behaviour.RefusedAppendNeighboursTest}.
 */
final class StoreMarks {

    private static final VarHandle STORED_SEQUENCE;
    private static final VarHandle POISONED_GENERATION;

    static {
        try {
            MethodHandles.Lookup lookup = MethodHandles.lookup();
            STORED_SEQUENCE = lookup.findVarHandle(StoreMarks.class, "storedSequenceNumber", long.class);
            POISONED_GENERATION = lookup.findVarHandle(StoreMarks.class, "poisonedGeneration", int.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    @SuppressWarnings("unused") // through STORED_SEQUENCE
    private long storedSequenceNumber = -1;
    @SuppressWarnings("unused") // through POISONED_GENERATION
    private int poisonedGeneration = -1;

    /** @return the sequence number of the aggregate's last event known to be stored, or -1; acquire */
    long storedSequenceNumber() {
        return (long) STORED_SEQUENCE.getAcquire(this);
    }

    /** Records the aggregate's events as stored up to {@code sequenceNumber}; release (a plain store on x86). */
    void storedUpTo(long sequenceNumber) {
        STORED_SEQUENCE.setRelease(this, sequenceNumber);
    }

    /** @return the highest generation given up so far, or -1; acquire */
    int poisonedGeneration() {
        return (int) POISONED_GENERATION.getAcquire(this);
    }

    /** Gives up {@code generation} (and every earlier one); never lowers the mark; release. */
    void poison(int generation) {
        int current;
        while (generation > (current = (int) POISONED_GENERATION.getAcquire(this))) {
            if (POISONED_GENERATION.compareAndSet(this, current, generation)) {
                return;
            }
        }
    }
}
