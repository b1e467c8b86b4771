package io.github.ringbus;

import org.axonframework.common.jdbc.JdbcException;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.junit.jupiter.api.Test;

import java.sql.SQLTransientConnectionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The bus's reads while the store cannot be reached: after a begin that found it unreachable, reads fail at once for
 * a while instead of each waiting for the pool's timeout; then one reader tries again, and a success ends it.
 */
class FailFastReadsTest {

    /** A read transaction manager whose begins fail while the database is away, counting them. */
    private static final class Database implements TransactionManager {

        final AtomicInteger begins = new AtomicInteger();
        volatile RuntimeException away;

        @Override
        public Transaction startTransaction() {
            begins.incrementAndGet();
            if (away != null) {
                throw away;
            }
            return new Transaction() {
                @Override
                public void commit() {
                }

                @Override
                public void rollback() {
                }
            };
        }
    }

    private static final JdbcException POOL_TIMED_OUT = new JdbcException(
            "Could not start a database transaction", new SQLTransientConnectionException(
                    "Connection is not available, request timed out after 1000ms", "08001"));

    private final Database database = new Database();
    private final FailFastReads gate = new FailFastReads(database);
    private final TransactionManager reads = gate.reads();

    @Test
    void afterABeginFoundTheStoreUnreachableTheNextReadsFailAtOnceNamingTheCause() {
        database.away = POOL_TIMED_OUT;
        assertThatThrownBy(reads::startTransaction).isSameAs(POOL_TIMED_OUT);

        assertThatThrownBy(reads::startTransaction).isInstanceOf(EventStoreException.class)
                                                   .hasMessageContaining("could not be reached")
                                                   .hasMessageContaining("request timed out")
                                                   .hasCause(POOL_TIMED_OUT);
        assertThatThrownBy(reads::startTransaction).isInstanceOf(EventStoreException.class);
        assertThat(database.begins).hasValue(1);
    }

    @Test
    void afterTheRetryIntervalOneReaderTriesAgainAndASuccessEndsIt() throws InterruptedException {
        database.away = POOL_TIMED_OUT;
        assertThatThrownBy(reads::startTransaction).isSameAs(POOL_TIMED_OUT);
        database.away = null;
        assertThatThrownBy(reads::startTransaction).isInstanceOf(EventStoreException.class);

        TimeUnit.NANOSECONDS.sleep(FailFastReads.RETRY_NANOS + TimeUnit.MILLISECONDS.toNanos(20));

        assertThat(reads.startTransaction()).isNotNull();
        assertThat(reads.startTransaction()).isNotNull();
        assertThat(database.begins).hasValue(3);
    }

    @Test
    void aProbeThatFailsAgainStartsAnotherInterval() throws InterruptedException {
        database.away = POOL_TIMED_OUT;
        assertThatThrownBy(reads::startTransaction).isSameAs(POOL_TIMED_OUT);
        TimeUnit.NANOSECONDS.sleep(FailFastReads.RETRY_NANOS + TimeUnit.MILLISECONDS.toNanos(20));

        assertThatThrownBy(reads::startTransaction).isSameAs(POOL_TIMED_OUT);
        assertThatThrownBy(reads::startTransaction).isInstanceOf(EventStoreException.class);
        assertThat(database.begins).hasValue(2);
    }

    @Test
    void aFailureThatDoesNotSayTheStoreIsUnreachableFailsOnlyItsOwnRead() {
        IllegalStateException other = new IllegalStateException("a bug of the transaction manager");
        database.away = other;
        assertThatThrownBy(reads::startTransaction).isSameAs(other);
        database.away = null;

        assertThat(reads.startTransaction()).isNotNull();
        assertThat(database.begins).hasValue(2);
    }

    @Test
    void aStoreAttemptThatStoredEndsTheFailingFast() {
        database.away = POOL_TIMED_OUT;
        assertThatThrownBy(reads::startTransaction).isSameAs(POOL_TIMED_OUT);
        database.away = null;

        gate.stored();

        assertThat(reads.startTransaction()).isNotNull();
    }

    @Test
    void anOutageTheStoreFoundFailsReadsAtOnceWithNoReaderTryingUntilTheStoreReachesItAgain()
            throws InterruptedException {
        gate.unreachable(POOL_TIMED_OUT);

        TimeUnit.NANOSECONDS.sleep(FailFastReads.RETRY_NANOS + TimeUnit.MILLISECONDS.toNanos(20));

        assertThatThrownBy(reads::startTransaction).isInstanceOf(EventStoreException.class).hasCause(POOL_TIMED_OUT);
        assertThat(database.begins).as("readers that tried").hasValue(0);

        gate.stored();

        assertThat(reads.startTransaction()).isNotNull();
    }

    @Test
    void aReaderWhoseOwnBeginFailedDuringTheStoresOutageStartsNoProbing() throws InterruptedException {
        database.away = POOL_TIMED_OUT;
        assertThatThrownBy(reads::startTransaction).isSameAs(POOL_TIMED_OUT); // it was waiting for the pool
        gate.unreachable(POOL_TIMED_OUT);

        TimeUnit.NANOSECONDS.sleep(FailFastReads.RETRY_NANOS + TimeUnit.MILLISECONDS.toNanos(20));

        assertThatThrownBy(reads::startTransaction).isInstanceOf(EventStoreException.class);
        assertThat(database.begins).as("readers that tried").hasValue(1);
    }

    @Test
    void readsWithoutTransactionsAreLeftAsTheyAre() {
        assertThat(new FailFastReads(NoTransactionManager.INSTANCE).reads()).isSameAs(NoTransactionManager.INSTANCE);
    }
}
