package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.StoreFailure;
import org.axonframework.common.AxonConfigurationException;
import org.springframework.beans.factory.ListableBeanFactory;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The application's ring buses as Spring Boot Actuator's health shows them (component {@code ringbus}), whichever
 * Boot's health API reads it ({@link RingbusHealthIndicator} on Spring Boot 3, {@link RingbusHealthIndicator4} on
 * Spring Boot 4): {@code UP} while each is running and storing; {@code DOWN} once one is not running (not started yet,
 * or shut down), and while a store thread's attempts have all failed for longer than
 * {@code ringbus.health.store-failure-window} (with the last failure). While the store cannot be reached (no
 * connection: the bus's store probe tries every 0.1 s) it stays {@code DOWN} until the probe reaches it, commands or
 * none. Any other failure not tried again within that window (and at least 30 s) is not held against the ring: with no
 * commands (a readiness probe that took the instance out of its load balancer) it reports {@code UP} again, and the
 * next commands show whether the database is back.
 * Details per bus bean: topology, threads, ring slots in use, the commands the store failed in the last minute, the
 * database round trip measured at start (where it was), and the store's failure while there is one. Only in Spring
 * Boot's readiness group if the application puts it there (docs/spring-boot.md): a store outage should make an instance
 * not ready, never restart it. With {@code ringbus.enabled=false} the component is there too, {@code UP}, saying that
 * ringbus is off, so that a readiness group that names it survives switching ringbus off.
 * <p>
 * Any thread (Actuator's); reads the buses' own thread-safe views, holds nothing.
 */
final class RingbusHealth {

    /** The shortest time within which a failed attempt still holds the ring DOWN (see {@link #recent()}). */
    static final Duration MOST_RECENT = Duration.ofSeconds(30);

    /**
     * The health at one moment.
     *
     * @param up      false when a bus is down
     * @param details what Actuator shows under the component, per bus bean
     */
    record Report(boolean up, Map<String, Object> details) {
    }

    private final ListableBeanFactory beans;
    private final Duration storeFailureWindow;

    /**
     * @param beans              where the ring buses are looked up, at each read
     * @param storeFailureWindow {@code ringbus.health.store-failure-window}
     * @throws InvalidRingbusPropertyException when the window is null or negative
     */
    RingbusHealth(ListableBeanFactory beans, Duration storeFailureWindow) {
        if (storeFailureWindow == null || storeFailureWindow.isNegative()) {
            throw new InvalidRingbusPropertyException(
                    "ringbus.health.store-failure-window must be zero or more, but was " + storeFailureWindow,
                    new AxonConfigurationException(
                            "the store failure window must be zero or more, but was " + storeFailureWindow));
        }
        this.beans = beans;
        this.storeFailureWindow = storeFailureWindow;
    }

    /** How recent the last failed attempt must be to hold the ring DOWN: the window, and at least 30 s. */
    private Duration recent() {
        return storeFailureWindow.compareTo(MOST_RECENT) > 0 ? storeFailureWindow : MOST_RECENT;
    }

    /** @return the health of every ring bus bean now */
    Report report() {
        boolean up = true;
        Map<String, Object> all = new LinkedHashMap<>();
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
                up = false;
            }
            all.put(entry.getKey(), details);
        }
        return new Report(up, all);
    }

    /** @return the report while ringbus is off: up, saying so */
    static Report off() {
        return new Report(true, Map.of("off", RingbusOffAutoConfiguration.LINE));
    }
}
