package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.AwayDatabase;
import io.github.ringbus.fixtures.RingbusFixture;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link RingCommandBus#storeFailure()}: a store that fails every attempt says so, and a stored attempt ends it. */
class StoreFailureReportTest {

    @Test
    void aStoreThatStoresReportsNoFailure() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(new AwayDatabase()))) {
            ring.sendAndWait(new AccountCommands.Open("a"));

            assertThat(ring.bus.storeFailure()).isNull();
        }
    }

    @Test
    void aStoreWhoseAttemptsAllFailSaysSinceWhenAndWithWhat() throws InterruptedException {
        AwayDatabase database = new AwayDatabase();
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.goAway();

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
        AwayDatabase database = new AwayDatabase();
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.goAway();
            ring.sendAndWait(new AccountCommands.Deposit("a", 1));
            assertThat(ring.bus.storeFailure()).isNotNull();

            database.comeBack();
            ring.sendAndWait(new AccountCommands.Deposit("a", 2));

            assertThat(ring.bus.storeFailure()).isNull();
        }
    }
}
