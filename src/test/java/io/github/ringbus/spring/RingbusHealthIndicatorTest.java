package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.AwayDatabase;
import io.github.ringbus.fixtures.RingbusFixture;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.Status;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ring in Spring Boot Actuator's health: UP while it runs and stores, DOWN while its store fails every attempt for
 * longer than the window (with the failure) and once it is shut down, UP again once the store stores.
 */
class RingbusHealthIndicatorTest {

    private final AwayDatabase database = new AwayDatabase();

    private static RingbusHealthIndicator indicatorOf(RingCommandBus bus, Duration window) {
        DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
        beans.registerSingleton("ringCommandBus", bus);
        return new RingbusHealthIndicator(beans, window);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> detailsOf(Health health) {
        return (Map<String, Object>) health.getDetails().get("ringCommandBus");
    }

    @Test
    void aRunningRingThatStoresIsUpWithItsShape() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));

            Health health = indicatorOf(ring.bus, Duration.ZERO).health();

            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(detailsOf(health)).containsKeys("topology", "handlerThreads", "storeThreads", "ringSize",
                                                       "ringInUse").doesNotContainKey("down");
        }
    }

    @Test
    void aStoreThatFailsEveryAttemptForLongerThanTheWindowIsDownWithItsFailureAndUpOnceItStores() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            RingbusHealthIndicator indicator = indicatorOf(ring.bus, Duration.ZERO);
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.goAway();

            ring.sendAndWait(new AccountCommands.Deposit("a", 1));

            Health down = indicator.health();
            assertThat(down.getStatus()).isEqualTo(Status.DOWN);
            assertThat(detailsOf(down).get("lastStoreFailure").toString()).contains("the database went away");

            database.comeBack();
            ring.sendAndWait(new AccountCommands.Deposit("a", 2));

            assertThat(indicator.health().getStatus()).isEqualTo(Status.UP);
        }
    }

    @Test
    void theCommandsTheStoreFailedInTheLastMinuteAreCounted() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            ring.sendAndWait(new AccountCommands.Open("b"));
            database.goAway();

            ring.sendAndWait(new AccountCommands.Deposit("a", 1));
            ring.sendAndWait(new AccountCommands.Deposit("b", 2));

            assertThat(detailsOf(indicatorOf(ring.bus, Duration.ZERO).health()))
                    .containsEntry("storeFailedCommandsInLastMinute", 2L);
        }
    }

    @Test
    void theDatabaseRoundTripTheBusWasBuiltForIsShown() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database)
                                                                 .databaseLatency(Duration.ofMillis(3)))) {
            assertThat(detailsOf(indicatorOf(ring.bus, Duration.ZERO).health()))
                    .containsEntry("databaseRoundTripAtStart", "PT0.003S");
        }
    }

    @Test
    void aStoreFailingForLessThanTheWindowIsStillUpAndSaysSo() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.goAway();

            ring.sendAndWait(new AccountCommands.Deposit("a", 1));

            Health health = indicatorOf(ring.bus, Duration.ofMinutes(1)).health();
            assertThat(health.getStatus()).isEqualTo(Status.UP);
            assertThat(detailsOf(health)).containsKey("storeFailingFor");
        }
    }

    @Test
    void aRingThatWasShutDownIsDown() {
        RingbusFixture ring = RingbusFixture.started();
        RingbusHealthIndicator indicator = indicatorOf(ring.bus, Duration.ofMinutes(1));

        ring.close();

        Health health = indicator.health();
        assertThat(health.getStatus()).isEqualTo(Status.DOWN);
        assertThat(detailsOf(health).get("down").toString()).contains("not running");
    }
}
