package io.github.ringbus.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns {@code ringbus.*} properties the bus refuses together ({@link InvalidRingbusPropertyException}, thrown while
 * the bus bean is built) into Spring Boot's short "APPLICATION FAILED TO START" report, which names the properties and
 * what to set, instead of a long stack trace that names builder methods. A value refused alone fails earlier, while
 * the properties are bound, with Spring Boot's own report. Registered in {@code META-INF/spring.factories}.
 */
final class InvalidRingbusPropertyFailureAnalyzer extends AbstractFailureAnalyzer<InvalidRingbusPropertyException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, InvalidRingbusPropertyException cause) {
        return new FailureAnalysis(
                "ringbus's command bus cannot be built with these properties: " + cause.getMessage(),
                "Change the ringbus.* properties named above in your application's configuration (docs/spring-boot.md "
                        + "lists every ringbus.* property, its default and its valid values).",
                cause);
    }
}
