package io.github.ringbus;

import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.lifecycle.Phase;
import org.axonframework.modelling.command.AnnotationCommandTargetResolver;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.inspection.AggregateMetaModelFactory;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;

import java.util.function.Supplier;

/**
 * Routes the commands of a configured aggregate that keeps a repository of its own (a JPA-mapped, state-stored
 * aggregate) through a {@link RingCommandBus} by aggregate; see
 * {@link RingAggregates#registerOwnRepositoryAggregate}. Used by {@link RingbusConfigurerModule} and by the Spring
 * Boot support.
 * <p>
 * Tests: {@code OwnRepositoryAggregateTest}, {@code AxonConfigurationTest}.
 */
final class OwnRepositoryAggregates {

    private OwnRepositoryAggregates() {
    }

    /**
     * Registers the aggregate's route when the configuration starts, in the phase the bus starts in: before Axon
     * subscribes the aggregate's command handler, so no command of it runs unrouted.
     *
     * @param ring          the bus, fetched at start
     * @param aggregate     the aggregate's configurer
     * @param configuration the configuration being initialized
     */
    static void routeAtStart(Supplier<RingCommandBus> ring, AggregateConfigurer<?> aggregate,
                                    Configuration configuration) {
        configuration.onStart(Phase.LOCAL_MESSAGE_HANDLER_REGISTRATIONS - 1,
                              () -> ring.get().aggregates().registerOwnRepositoryAggregate(
                                      modelOf(aggregate, configuration),
                                      targetResolverOf(aggregate, configuration)));
    }

    /**
     * The aggregate's model: the one Axon's {@code AggregateConfigurer} built, with its polymorphic subtypes (their
     * commands are routed too); when that cannot be read, one built as it builds it, without subtypes.
     */
    private static AggregateModel<?> modelOf(AggregateConfigurer<?> aggregate, Configuration configuration) {
        AggregateModel<?> axons = AggregateConfigurerSettings.model(aggregate);
        if (axons != null) {
            return axons;
        }
        Class<?> type = aggregate.aggregateType();
        return configuration.getComponent(
                AggregateMetaModelFactory.class,
                () -> new AnnotatedAggregateMetaModelFactory(configuration.parameterResolverFactory(),
                                                             configuration.handlerDefinition(type))
        ).createModel(type);
    }

    /**
     * The resolver Axon's command handler of the aggregate uses: its own, else the configuration's, else Axon's
     * default.
     */
    private static CommandTargetResolver targetResolverOf(AggregateConfigurer<?> aggregate,
                                                          Configuration configuration) {
        CommandTargetResolver own = AggregateConfigurerSettings.commandTargetResolver(aggregate);
        return own != null ? own : configuration.getComponent(CommandTargetResolver.class,
                                                              () -> AnnotationCommandTargetResolver.builder().build());
    }
}
