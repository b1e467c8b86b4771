package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.AwayDatabase;
import io.github.ringbus.fixtures.RingbusFixture;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.support.DefaultListableBeanFactory;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ring in Spring Boot Actuator's health: UP while it runs and stores, DOWN while its store fails every attempt for
 * longer than the window (with the failure) and once it is shut down, UP again once the store stores.
 */
class RingbusHealthTest {

    private final AwayDatabase database = new AwayDatabase();

    private static RingbusHealth indicatorOf(RingCommandBus bus, Duration window) {
        DefaultListableBeanFactory beans = new DefaultListableBeanFactory();
        beans.registerSingleton("ringCommandBus", bus);
        return new RingbusHealth(beans, window);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> detailsOf(RingbusHealth.Report health) {
        return (Map<String, Object>) health.details().get("ringCommandBus");
    }

    @Test
    void aRunningRingThatStoresIsUpWithItsShape() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));

            RingbusHealth.Report health = indicatorOf(ring.bus, Duration.ZERO).report();

            assertThat(health.up()).isTrue();
            assertThat(detailsOf(health)).containsKeys("topology", "handlerThreads", "storeThreads", "ringSize",
                                                       "ringInUse").doesNotContainKey("down");
        }
    }

    @Test
    void aStoreThatFailsEveryAttemptForLongerThanTheWindowIsDownWithItsFailureAndUpOnceItStores() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            RingbusHealth indicator = indicatorOf(ring.bus, Duration.ZERO);
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.goAway();

            ring.sendAndWait(new AccountCommands.Deposit("a", 1));

            RingbusHealth.Report down = indicator.report();
            assertThat(down.up()).isFalse();
            assertThat(detailsOf(down).get("lastStoreFailure").toString()).contains("the database went away");

            database.comeBack();
            ring.sendAndWait(new AccountCommands.Deposit("a", 2));

            assertThat(indicator.report().up()).isTrue();
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

            assertThat(detailsOf(indicatorOf(ring.bus, Duration.ZERO).report()))
                    .containsEntry("storeFailedCommandsInLastMinute", 2L);
        }
    }

    @Test
    void theDatabaseRoundTripTheBusWasBuiltForIsShown() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database)
                                                                 .databaseLatency(Duration.ofMillis(3)))) {
            assertThat(detailsOf(indicatorOf(ring.bus, Duration.ZERO).report()))
                    .containsEntry("databaseRoundTripAtStart", "PT0.003S");
        }
    }

    @Test
    void aStoreFailingForLessThanTheWindowIsStillUpAndSaysSo() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.transactionManager(database))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            database.goAway();

            ring.sendAndWait(new AccountCommands.Deposit("a", 1));

            RingbusHealth.Report health = indicatorOf(ring.bus, Duration.ofMinutes(1)).report();
            assertThat(health.up()).isTrue();
            assertThat(detailsOf(health)).containsKey("storeFailingFor");
        }
    }

    @Test
    void aRingThatWasShutDownIsDown() {
        RingbusFixture ring = RingbusFixture.started();
        RingbusHealth indicator = indicatorOf(ring.bus, Duration.ofMinutes(1));

        ring.close();

        RingbusHealth.Report health = indicator.report();
        assertThat(health.up()).isFalse();
        assertThat(detailsOf(health).get("down").toString()).contains("not running");
    }
}
