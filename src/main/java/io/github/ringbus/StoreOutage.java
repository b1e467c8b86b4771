package io.github.ringbus;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

/**
 * The store while it cannot be reached. Once a store attempt could not begin its transaction because the store is
 * unreachable ({@link StoreFailures#unreachable}: no connection, the server away), the store threads fail every batch
 * that comes at once, without trying it (each command with an {@code EventStoreException} that names it and the
 * driver's error, as a failed attempt's commands), while a probe thread ({@code <prefix>-store-probe}) begins and
 * commits an empty transaction every {@link #PROBE_EVERY_NANOS} (0.1 s) until one succeeds; then batches are tried again. The
 * bus's reads fail at once meanwhile too ({@link FailFastReads}).
 * <p>
 * Why: a pool waits for a connection before it gives up (HikariCP 30 s by default, Spring Boot's default pool), so a
 * store thread that tried each batch waited that long per batch, its callers with it, and stored what it held once
 * the database was back, long after callers had given up waiting (an HTTP request's own timeout): a client that
 * retries then stores twice. Failing at once tells each caller the truth within milliseconds, not stored, and no
 * command waits for a connection but those of the attempt that found the outage. Only a transaction that could not
 * begin starts an outage: a connection lost under an append or a commit says nothing of the next connection.
 * Without a transaction manager nothing begins, so nothing starts one.
 * <p>
 * Threads: store threads read {@link #failure()} once per batch (one volatile read), start outages and end them when
 * an attempt stores; the probe thread ends them. Each write is a whole decision; the probe is one thread at a time (a
 * compare-and-set). One per bus, shared by its store threads. Tests: {@code StoreOutageTest}.
 */
final class StoreOutage {

    private static final Logger logger = LoggerFactory.getLogger(StoreOutage.class);

    /**
     * How long the probe waits between its tries (each try itself waits as long as the pool lets it: with a pool that
     * waits for a connection the probe is nearly always waiting in it, and takes the first connection the pool makes;
     * with one that fails at once, at most ten tries a second): commands fail at once for at most this long after the
     * store can be reached again.
     */
    static final long PROBE_EVERY_NANOS = TimeUnit.MILLISECONDS.toNanos(100);

    private final TransactionManager transactions;
    private final FailFastReads reads;
    private final String probeThreadName;
    /** What the store failed with while it cannot be reached; null while it can. */
    private volatile Throwable failure;
    /** When the outage began ({@code System.nanoTime()}), for the log line that ends it. */
    private volatile long sinceNanos;
    /** The batches' commands failed at once in this outage, for the log line that ends it. */
    private final AtomicLong failedAtOnce = new AtomicLong();
    /** True while a probe thread runs. */
    private final AtomicBoolean probing = new AtomicBoolean();
    private volatile boolean closed;
    private volatile Thread probe;

    /**
     * @param transactions    the store's transaction manager, which the probe begins and commits on
     * @param reads           the bus's reads, failed at once during an outage and told when it ends
     * @param probeThreadName the probe thread's name
     */
    StoreOutage(TransactionManager transactions, FailFastReads reads, String probeThreadName) {
        this.transactions = transactions;
        this.reads = reads;
        this.probeThreadName = probeThreadName;
    }

    /** @return what the store failed with while it cannot be reached (batches fail at once), or null; any thread */
    Throwable failure() {
        return failure;
    }

    /**
     * The outage as the health checks read it: failing since it began, and failing now (the probe has not reached the
     * store), though no command may have come since: the store is known to be away, not merely untried.
     *
     * @param now {@code System.nanoTime()}
     * @return the outage, or null while there is none; any thread
     */
    StoreFailure failure(long now) {
        Throwable away = failure;
        if (away == null) {
            return null;
        }
        return new StoreFailure(Duration.ofNanos(Math.max(0, now - sinceNanos)), Duration.ZERO,
                                StoreFailureNotice.rootCause(away));
    }

    /**
     * A store attempt could not begin its transaction (store thread): when the store is unreachable, an outage begins
     * (if none is on) and the probe starts.
     *
     * @param beginFailure what beginning the transaction threw
     */
    void beginFailed(Throwable beginFailure) {
        if (closed || transactions == NoTransactionManager.INSTANCE || !StoreFailures.unreachable(beginFailure)) {
            return;
        }
        if (failure == null) {
            sinceNanos = System.nanoTime();
            failedAtOnce.set(0);
            logger.warn("The event store could not be reached: the store fails each batch at once, without trying "
                                + "it, until a probe reaches the store (tried every {} ms); cause: {}",
                        TimeUnit.NANOSECONDS.toMillis(PROBE_EVERY_NANOS), StoreFailureNotice.rootCause(beginFailure));
        }
        failure = beginFailure;
        reads.unreachable(beginFailure);
        startProbe();
    }

    /**
     * A batch was failed at once (store thread), for the count the end of the outage logs.
     *
     * @param commands how many commands it failed
     */
    void failedAtOnce(int commands) {
        failedAtOnce.addAndGet(commands);
    }

    /** A store attempt stored (store thread): the store is reachable. One volatile read when there is no outage. */
    void stored() {
        if (failure != null) {
            reachable("a store attempt");
        }
        reads.stored();
    }

    /** Stops the probe (shutdown): no outage begins any more. */
    void close() {
        closed = true;
        Thread running = probe;
        if (running != null) {
            running.interrupt();
        }
    }

    private void reachable(String by) {
        Throwable was = failure;
        if (was != null) {
            // Said before it ends: whoever sees the outage ended finds the line logged.
            logger.info("The event store is reachable again ({} reached it after {} ms): batches are tried again; {} "
                                + "command(s) failed at once meanwhile", by,
                        TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sinceNanos), failedAtOnce.get());
        }
        failure = null;
        reads.stored();
    }

    private void startProbe() {
        if (!closed && probing.compareAndSet(false, true)) {
            Thread thread = new Thread(this::probe, probeThreadName);
            thread.setDaemon(true);
            probe = thread;
            thread.start();
        }
    }

    /** The probe thread: one empty transaction every {@link #PROBE_EVERY_NANOS}, until one begins. */
    private void probe() {
        try {
            while (!closed && failure != null) {
                LockSupport.parkNanos(PROBE_EVERY_NANOS);
                if (closed || failure == null) {
                    return;
                }
                Transaction transaction;
                try {
                    transaction = transactions.startTransaction();
                } catch (Throwable stillAway) {
                    if (closed) {
                        return;
                    }
                    if (StoreFailures.unreachable(stillAway)) {
                        continue;
                    }
                    // Another failure: the store answered. The next attempt says what it thinks of the batch.
                    reachable("the probe");
                    return;
                }
                try {
                    transaction.commit();
                } catch (RuntimeException commitFailed) {
                    // It began: a connection was there, which is what the probe asks. Nothing of it to keep.
                }
                reachable("the probe");
            }
        } finally {
            probe = null;
            probing.set(false);
            // An outage that began after the loop's last look found the probe running and started none.
            if (!closed && failure != null) {
                startProbe();
            }
        }
    }
}
