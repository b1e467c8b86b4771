package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.StoreFailure;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Spring Boot Actuator's view of the application's ring buses ({@code /actuator/health}, component {@code ringbus}):
 * {@code UP} while each is running and storing; {@code DOWN} once one is not running (not started yet, or shut down),
 * and while a store thread's attempts have all failed for longer than {@code ringbus.health.store-failure-window}
 * (with the last failure). A store that has not been tried within that window (and at least 30 s) is not held
 * against the ring: with no commands (a readiness probe that took the instance out of its load balancer) it reports
 * {@code UP} again, and the next commands show whether the database is back. Details per bus bean: topology,
 * threads, ring slots in use, the commands the store failed in the last minute, the database round trip measured at
 * start (where it was), and the store's failure while there is one. Only in Spring Boot's readiness group if the application puts it there
 * (docs/spring-boot.md): a store outage should make an instance not ready, never restart it.
 */
final class RingbusHealthIndicator implements HealthIndicator {

    /** The shortest time within which a failed attempt still holds the ring DOWN (see {@link #recent()}). */
    static final Duration MOST_RECENT = Duration.ofSeconds(30);

    private final ListableBeanFactory beans;
    private final Duration storeFailureWindow;

    RingbusHealthIndicator(ListableBeanFactory beans, Duration storeFailureWindow) {
        this.beans = beans;
        this.storeFailureWindow = storeFailureWindow;
    }

    /** How recent the last failed attempt must be to hold the ring DOWN: the window, and at least 30 s. */
    private Duration recent() {
        return storeFailureWindow.compareTo(MOST_RECENT) > 0 ? storeFailureWindow : MOST_RECENT;
    }

    @Override
    public Health health() {
        Health.Builder health = Health.up();
        for (Map.Entry<String, RingCommandBus> entry : beans.getBeansOfType(RingCommandBus.class, false, false)
                                                               .entrySet()) {
            RingCommandBus bus = entry.getValue();
            Map<String, Object> details = new LinkedHashMap<>();
            details.put("topology", bus.topology().name());
            details.put("handlerThreads", bus.handlerThreads());
            details.put("storeThreads", bus.storeThreads());
            details.put("ringSize", bus.ringSize());
            details.put("ringInUse", bus.ringSize() - bus.remainingCapacity());
            details.put("storeFailedCommandsInLastMinute", bus.storeFailedCommandsInLastMinute());
            if (bus.databaseLatency() != null) {
                details.put("databaseRoundTripAtStart", bus.databaseLatency().toString());
            }
            String down = bus.isRunning() ? null : "not running (not started yet, or shut down)";
            StoreFailure failure = bus.storeFailure();
            if (failure != null) {
                details.put("storeFailingFor", failure.failingFor().toString());
                details.put("lastStoreFailure", failure.lastFailure());
                if (down == null && failure.failingFor().compareTo(storeFailureWindow) >= 0
                        && failure.sinceLastFailure().compareTo(recent()) < 0) {
                    down = "every store attempt has failed for " + failure.failingFor().toSeconds() + " s";
                }
            }
            if (down != null) {
                details.put("down", down);
                health.down();
            }
            health.withDetail(entry.getKey(), details);
        }
        return health.build();
    }
}
