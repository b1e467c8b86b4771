package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link RingCommandBus#storeFailure()}: a store that fails every attempt says so, and a stored attempt ends it. */
class StoreFailureReportTest {

    /** A database that can go away: while {@code down}, no transaction begins. */
    private static final class Database implements TransactionManager {

        final AtomicBoolean down = new AtomicBoolean();

        @Override
        public Transaction startTransaction() {
            if (down.get()) {
                throw new IllegalStateException("the database went away");
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

    @Test
    void aStoreThatStoresReportsNoFailure() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(new Database()))) {
            ring.sendAndWait(new AccountCommands.Open("a"));

            assertThat(ring.bus.storeFailure()).isNull();
        }
    }

    @Test
    void aStoreWhoseAttemptsAllFailSaysSinceWhenAndWithWhat() throws InterruptedException {
        Database database = new Database();
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.down.set(true);

            ring.sendAndWait(new AccountCommands.Deposit("a", 1));
            Thread.sleep(20);
            ring.sendAndWait(new AccountCommands.Deposit("a", 2));

            StoreFailure failure = ring.bus.storeFailure();
            assertThat(failure).isNotNull();
            assertThat(failure.failingFor()).isGreaterThanOrEqualTo(java.time.Duration.ofMillis(20));
            assertThat(failure.sinceLastFailure()).isLessThan(failure.failingFor());
            assertThat(failure.lastFailure()).contains("IllegalStateException", "the database went away");
        }
    }

    @Test
    void theFirstStoredAttemptEndsTheFailure() {
        Database database = new Database();
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.down.set(true);
            ring.sendAndWait(new AccountCommands.Deposit("a", 1));
            assertThat(ring.bus.storeFailure()).isNotNull();

            database.down.set(false);
            ring.sendAndWait(new AccountCommands.Deposit("a", 2));

            assertThat(ring.bus.storeFailure()).isNull();
        }
    }
}
