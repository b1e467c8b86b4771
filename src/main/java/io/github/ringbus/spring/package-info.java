/**
 * Spring Boot support: with ringbus and Axon's Spring Boot starter on the class path, a
 * {@link io.github.ringbus.RingCommandBus} is the application's local command bus, set with {@code ringbus.*}
 * properties ({@link io.github.ringbus.spring.RingbusProperties}), measured with Micrometer
 * ({@link io.github.ringbus.spring.RingbusMetrics}) and traced with Axon's span factory. See
 * {@link io.github.ringbus.spring.RingbusAutoConfiguration}. Spring, Spring Boot and Micrometer are optional
 * dependencies of ringbus: nothing in this package is loaded without them.
 */
package io.github.ringbus.spring;
