package io.github.ringbus.spring;

import org.axonframework.common.AxonConfigurationException;

/**
 * The application has no single Axon {@code EventStore} for the ring's event-sourced aggregates: no
 * {@code EventStorageEngine} bean and no Axon Server, or several event stores. Its message names the ways out;
 * {@link MissingEventStoreFailureAnalyzer} shows them as Spring Boot's short start-up failure report.
 */
final class MissingEventStoreException extends AxonConfigurationException {

    private final boolean none;

    MissingEventStoreException(boolean none) {
        super("ringbus: RingCommandBus needs exactly one Axon EventStore bean to load and store event-sourced "
                      + "aggregates, and found " + (none ? "none" : "several") + ". Add an EventStorageEngine bean "
                      + "(Axon's JPA or JDBC engine, which Spring Boot configures from a DataSource, or an "
                      + "InMemoryEventStorageEngine), use Axon Server, or set ringbus.enabled=false to keep Axon's "
                      + "default command bus.");
        this.none = none;
    }

    /** @return true when no event store was found (rather than several) */
    boolean none() {
        return none;
    }
}
