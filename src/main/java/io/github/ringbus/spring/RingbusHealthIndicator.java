package io.github.ringbus.spring;

import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

import java.util.function.Supplier;

/**
 * {@link RingbusHealth} on Spring Boot 3's health API ({@code org.springframework.boot.actuate.health}): the
 * {@code ringbus} component of {@code /actuator/health}. Any thread.
 */
final class RingbusHealthIndicator implements HealthIndicator {

    private final Supplier<RingbusHealth.Report> report;

    RingbusHealthIndicator(Supplier<RingbusHealth.Report> report) {
        this.report = report;
    }

    @Override
    public Health health() {
        RingbusHealth.Report now = report.get();
        return (now.up() ? Health.up() : Health.down()).withDetails(now.details()).build();
    }
}
