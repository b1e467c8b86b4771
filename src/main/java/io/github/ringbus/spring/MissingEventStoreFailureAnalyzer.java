package io.github.ringbus.spring;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Turns a start-up without an event store ({@link MissingEventStoreException}) into Spring Boot's short "APPLICATION
 * FAILED TO START" report, which says what is missing and the settings that fix it, instead of a long stack trace.
 * Registered in {@code META-INF/spring.factories}.
 */
final class MissingEventStoreFailureAnalyzer extends AbstractFailureAnalyzer<MissingEventStoreException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, MissingEventStoreException cause) {
        if (!cause.none()) {
            return new FailureAnalysis(
                    "ringbus's command bus needs exactly one Axon EventStore, and the application defines several.",
                    "Keep one EventStore (or EventStorageEngine) bean, or mark the one for commands @Primary.", cause);
        }
        return new FailureAnalysis(
                "ringbus's command bus has no event store to load and store aggregates: Axon Server is off "
                        + "(axon.axonserver.enabled=false) or absent, and the application has no EventStorageEngine "
                        + "bean.",
                String.join(System.lineSeparator(),
                            "Give Axon a place to store events, one of:",
                            "  - a database: add spring-boot-starter-data-jpa (or spring-boot-starter-jdbc) and your "
                                    + "JDBC driver, and set spring.datasource.url; Axon then configures its JPA (or "
                                    + "JDBC) event storage engine",
                            "  - in memory, to try things out: a bean "
                                    + "'EventStorageEngine storageEngine() { return new InMemoryEventStorageEngine(); }'",
                            "  - Axon Server: remove axon.axonserver.enabled=false and run an Axon Server",
                            "Or keep Axon's own command bus: ringbus.enabled=false."),
                cause);
    }
}
