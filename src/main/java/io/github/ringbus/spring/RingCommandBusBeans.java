package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import org.springframework.beans.factory.config.BeanPostProcessor;
import org.springframework.core.Ordered;
import org.springframework.core.PriorityOrdered;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Remembers every {@link RingCommandBus} bean as it was created, under its bean name, before any other
 * {@link BeanPostProcessor} can wrap it. Monitoring, tracing and fault-injection starters (and Spring AOP) replace the
 * bus bean with a wrapper or proxy that exposes only {@code CommandBus}; ringbus still finds the ring behind it here,
 * whatever type the bean exposes.
 * <p>
 * Runs first among the post-processors (highest precedence) and in the "before initialization" step, which precedes
 * every post-processor's "after initialization" step, where wrappers are usually made. Thread-safe.
 */
final class RingCommandBusBeans implements BeanPostProcessor, PriorityOrdered {

    private final Map<String, RingCommandBus> rings = new ConcurrentHashMap<>();

    @Override
    public Object postProcessBeforeInitialization(Object bean, String beanName) {
        if (bean instanceof RingCommandBus) {
            rings.put(beanName, (RingCommandBus) bean);
        }
        return bean;
    }

    @Override
    public int getOrder() {
        return Ordered.HIGHEST_PRECEDENCE;
    }

    /**
     * @param beanName a bean's name
     * @return the ring bus created under that name, or null when no ring bus was created under it (yet)
     */
    RingCommandBus ring(String beanName) {
        return rings.get(beanName);
    }

    /** @return the names of the ring bus beans created so far */
    Set<String> names() {
        return Set.copyOf(rings.keySet());
    }
}
