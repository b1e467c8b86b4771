package io.github.ringbus.spring;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingClass;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.util.function.Supplier;

/**
 * The {@code ringbus} component of Spring Boot Actuator's health ({@link RingbusHealth}), on Spring Boot 3's health
 * API or on Spring Boot 4's ({@code spring-boot-health}), whichever the application has, in one bean named
 * {@code ringbusHealthIndicator}. There with {@code ringbus.enabled=false} too ({@code UP}, saying ringbus is off): a
 * readiness group that includes {@code ringbus} must not stop the application when ringbus is switched off. An
 * application's own bean of that name wins.
 */
@AutoConfiguration
@EnableConfigurationProperties(RingbusProperties.class)
public class RingbusHealthAutoConfiguration {

    /** The bean's name; Actuator names the component after it, without "HealthIndicator": {@code ringbus}. */
    static final String BEAN_NAME = "ringbusHealthIndicator";

    /** The health of the rings, or of ringbus switched off. */
    static Supplier<RingbusHealth.Report> reportOf(ListableBeanFactory beans, RingbusProperties properties) {
        if (!properties.isEnabled()) {
            RingbusHealth.Report off = RingbusHealth.off();
            return () -> off;
        }
        RingbusHealth health = new RingbusHealth(beans, properties.getHealth().getStoreFailureWindow());
        return health::report;
    }

    /** Spring Boot 3: {@code org.springframework.boot.actuate.health}, where Boot 4's health API is absent. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.actuate.health.HealthIndicator")
    @ConditionalOnMissingClass("org.springframework.boot.health.contributor.HealthIndicator")
    static class Boot3 {

        @Bean(BEAN_NAME)
        @ConditionalOnMissingBean(name = BEAN_NAME)
        RingbusHealthIndicator ringbusHealthIndicator(ListableBeanFactory beans, RingbusProperties properties) {
            return new RingbusHealthIndicator(reportOf(beans, properties));
        }
    }

    /** Spring Boot 4: {@code org.springframework.boot.health.contributor}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(name = "org.springframework.boot.health.contributor.HealthIndicator")
    static class Boot4 {

        @Bean(BEAN_NAME)
        @ConditionalOnMissingBean(name = BEAN_NAME)
        RingbusHealthIndicator4 ringbusHealthIndicator(ListableBeanFactory beans, RingbusProperties properties) {
            return new RingbusHealthIndicator4(reportOf(beans, properties));
        }
    }
}
