package io.github.ringbus.spring;

import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;

import java.util.function.Supplier;

/**
 * {@link RingbusHealth} on Spring Boot 4's health API ({@code org.springframework.boot.health.contributor}, module
 * {@code spring-boot-health}): the {@code ringbus} component of {@code /actuator/health}. Any thread.
 */
final class RingbusHealthIndicator4 implements HealthIndicator {

    private final Supplier<RingbusHealth.Report> report;

    RingbusHealthIndicator4(Supplier<RingbusHealth.Report> report) {
        this.report = report;
    }

    @Override
    public Health health() {
        RingbusHealth.Report now = report.get();
        return (now.up() ? Health.up() : Health.down()).withDetails(now.details()).build();
    }
}
