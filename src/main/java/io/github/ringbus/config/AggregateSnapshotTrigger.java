package io.github.ringbus.config;

import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Component;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Field;

/**
 * The snapshot trigger an aggregate was configured with: {@code AggregateConfigurer.configureSnapshotTrigger} in an
 * Axon configuration, or Spring's {@code @Aggregate(snapshotTriggerDefinition = ...)}, which Axon's Spring support turns
 * into the same call.
 * <p>
 * Axon 4's {@link AggregateConfigurer} has no getter for it, and builds it only into the repository it creates
 * itself, which ringbus replaces; it is read from the configurer's private component. Should a later Axon version
 * keep it elsewhere, aggregates get the bus's trigger and a warning says so.
 */
public final class AggregateSnapshotTrigger {

    private static final Logger logger = LoggerFactory.getLogger(AggregateSnapshotTrigger.class);
    private static final Field COMPONENT = componentField();

    private AggregateSnapshotTrigger() {
    }

    /**
     * @param aggregate an aggregate's configurer, after the configuration was initialized
     * @return the snapshot trigger definition it was configured with; {@link NoSnapshotTriggerDefinition} when none
     */
    public static SnapshotTriggerDefinition of(AggregateConfigurer<?> aggregate) {
        if (COMPONENT == null) {
            return NoSnapshotTriggerDefinition.INSTANCE;
        }
        try {
            Object definition = ((Component<?>) COMPONENT.get(aggregate)).get();
            return definition instanceof SnapshotTriggerDefinition trigger
                    ? trigger
                    : NoSnapshotTriggerDefinition.INSTANCE;
        } catch (IllegalAccessException e) {
            logger.warn("Cannot read the snapshot trigger of aggregate [{}]: it gets the bus's",
                        aggregate.aggregateType().getName(), e);
            return NoSnapshotTriggerDefinition.INSTANCE;
        }
    }

    private static Field componentField() {
        try {
            Field field = AggregateConfigurer.class.getDeclaredField("snapshotTriggerDefinition");
            field.setAccessible(true);
            return field;
        } catch (ReflectiveOperationException | RuntimeException e) {
            logger.warn("Cannot read the snapshot triggers configured per aggregate ({}): every ring aggregate gets "
                                + "the bus's snapshot trigger", e.toString());
            return null;
        }
    }
}
