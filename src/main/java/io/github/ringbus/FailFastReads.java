package io.github.ringbus;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStoreException;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The bus's read transactions, failing fast while the store cannot be reached. Beginning a read's transaction is where
 * a reader waits for the store: a pool's connection timeout (1 s, 30 s by default in HikariCP) when the database is
 * away. A ring's handler thread reads the aggregates it gave up one after another, so without this each caller would
 * wait for every read queued before its own: a 30 s outage once kept callers 30 s. Once a begin failed with the store
 * unreachable ({@link StoreFailures#unreachable}), the reads of the next {@link #RETRY_NANOS} fail at once with an {@link EventStoreException} naming the failure; then one reader tries
 * again (a probe) while the others still fail at once, and a begin that succeeds, or an attempt of the store stage
 * that stores, ends it. A failure of any other kind changes nothing, and so does a store attempt's failure under an
 * append or a commit (one connection killed under an append says nothing of the next read's); a store attempt that
 * could not begin its transaction begins the same fast failing ({@link StoreOutage}). One per bus.
 * <p>
 * Thread-safe: any reading thread (handler, preload, read-ahead) begins reads, and store threads report the
 * attempts that stored; {@link #failure} and {@link #retryAt} are written by whichever thread failed, claimed the probe (a
 * compare-and-set decides the one prober) or stored, each write a whole decision.
 */
final class FailFastReads implements TransactionManager {

    /** How long reads fail at once after the store was found unreachable, before one reader tries again. */
    static final long RETRY_NANOS = TimeUnit.MILLISECONDS.toNanos(500);


    private final TransactionManager delegate;
    /** The last begin's failure while the store is unreachable, or null while it is reachable. */
    private volatile Throwable failure;
    /** When a reader may try the store again: before it, reads fail at once. */
    private final AtomicLong retryAt = new AtomicLong();
    /**
     * True while the store stage's outage holds ({@link StoreOutage}): reads fail at once and no reader probes, even
     * one whose own begin failed meanwhile; the store's probe ends it ({@link #stored}).
     */
    private volatile boolean storeOutage;

    /** @param readTransactions the bus's read transaction manager */
    FailFastReads(TransactionManager readTransactions) {
        this.delegate = readTransactions;
    }

    /**
     * @return the transaction manager the bus's reads begin on: this, failing fast while the store cannot be reached;
     *         {@link NoTransactionManager} as it is (no transaction is begun, so nothing waits for a connection)
     */
    TransactionManager reads() {
        return delegate == NoTransactionManager.INSTANCE ? delegate : this;
    }

    /**
     * A store thread's attempt stored: the store is reachable. One volatile read on the store's path; a write only
     * when reads were failing fast.
     */
    void stored() {
        if (failure != null) {
            failure = null;
        }
        if (storeOutage) {
            storeOutage = false;
        }
    }

    /**
     * The store stage found the store unreachable ({@link StoreOutage}): reads fail at once from now on, and no reader
     * tries the store (a reader that tried would hold its handler thread, and every command queued behind it, for the
     * pool's connection timeout) until the store's probe reaches it ({@link #stored}).
     *
     * @param storeFailure what the store's attempt failed with
     */
    void unreachable(Throwable storeFailure) {
        storeOutage = true;
        failure = storeFailure;
    }

    @Override
    public Transaction startTransaction() {
        Throwable unreachable = failure;
        if (unreachable != null) {
            long now = System.nanoTime();
            long at = retryAt.get();
            if (storeOutage || now - at < 0 || !retryAt.compareAndSet(at, now + RETRY_NANOS)) {
                throw new EventStoreException(
                        "The event store could not be reached: reads fail at once until one succeeds again, tried "
                                + "every " + TimeUnit.NANOSECONDS.toMillis(RETRY_NANOS) + " ms (cause: "
                                + StoreFailureNotice.rootCause(unreachable) + ")", unreachable);
            }
            // This reader is the probe.
        }
        try {
            Transaction transaction = delegate.startTransaction();
            stored(); // reachable again
            return transaction;
        } catch (RuntimeException | Error beginFailed) {
            if (StoreFailures.unreachable(beginFailed)) {
                retryAt.set(System.nanoTime() + RETRY_NANOS);
                failure = beginFailed;
            }
            throw beginFailed;
        }
    }
}
