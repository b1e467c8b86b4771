package io.github.ringbus.config;

import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;

/**
 * The snapshot trigger an aggregate was configured with: {@code AggregateConfigurer.configureSnapshotTrigger} in an
 * Axon configuration, or Spring's {@code @Aggregate(snapshotTriggerDefinition = ...)}, which Axon's Spring support turns
 * into the same call. Read by {@link AggregateConfigurerSettings}, the one place that reads Axon's private settings.
 */
public final class AggregateSnapshotTrigger {

    private AggregateSnapshotTrigger() {
    }

    /**
     * @param aggregate an aggregate's configurer, after the configuration was initialized
     * @return the snapshot trigger definition it was configured with; {@link NoSnapshotTriggerDefinition} when none
     */
    public static SnapshotTriggerDefinition of(AggregateConfigurer<?> aggregate) {
        return AggregateConfigurerSettings.snapshotTrigger(aggregate);
    }
}
