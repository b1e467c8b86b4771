package io.github.ringbus.spring;

import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.ListableBeanFactory;

/** The only class of the auto-configuration that names Micrometer's types: loaded only when Micrometer is present. */
final class MicrometerSupport {

    private MicrometerSupport() {
    }

    /**
     * @param beanFactory the application's beans
     * @param busName     the bus's bean name
     * @return metrics in the application's (primary) MeterRegistry, or null when it has none
     */
    static RingbusMetrics metrics(ListableBeanFactory beanFactory, String busName) {
        MeterRegistry registry = beanFactory.getBeanProvider(MeterRegistry.class).getIfUnique();
        return registry == null ? null : new RingbusMetrics(registry, busName);
    }
}
