package io.github.ringbus;

import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.ConfigurerModule;
import org.axonframework.modelling.command.AnnotationCommandTargetResolver;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.annotation.Annotation;
import java.util.function.Supplier;

/**
 * Routes the aggregates of an Axon configuration through a {@link RingCommandBus}, with no code from the user.
 * <p>
 * Axon finds this module through {@code META-INF/services/org.axonframework.config.ConfigurerModule}. When the
 * configuration is built and its command bus is a {@link RingCommandBus} (or a distributed bus whose local segment is
 * one), every aggregate configured with {@code configureAggregate} gets a ringbus repository in place of Axon's
 * default {@code EventSourcingRepository}, with the aggregate's own snapshot trigger and command target resolver;
 * a cache configured for it is not used (ringbus's own takes its place, and a warning says so), and a lock factory
 * other than Axon's in-process ones fails start-up (see {@link AggregateConfigurerSettings}). Aggregates mapped with JPA ({@code @Entity}), and aggregates configured with a
 * repository of their own, keep their repository; their commands are routed by aggregate and each runs whole on its
 * aggregate's handler thread (see {@link RingAggregates#registerOwnRepositoryAggregate}). With any other command bus this module does
 * nothing: the default command target resolver it registers is then Axon's own (on a ring it is
 * {@link AnnotatedTargetResolver}: Axon's rules, found once per command class).
 * <p>
 * Tests: {@code AxonConfigurationTest}.
 */
public final class RingbusConfigurerModule implements ConfigurerModule {

    private static final Logger logger = LoggerFactory.getLogger(RingbusConfigurerModule.class);

    @Override
    public void configureModule(Configurer configurer) {
        // On a ring: the same rules as Axon's default resolver, without its per-command reflection; on any other bus,
        // Axon's own. A resolver the application registers itself replaces this one.
        configurer.registerComponent(CommandTargetResolver.class,
                                     c -> RingCommandBus.localRingOf(c.commandBus()) != null
                                             ? new AnnotatedTargetResolver()
                                             : AnnotationCommandTargetResolver.builder().build());
        configurer.onInitialize(RingbusConfigurerModule::routeAggregatesThroughRing);
    }

    /**
     * Whether the command bus is a ring is known only once it is built, and building it builds the event store, which
     * may ask the aggregates' modules for their settings ({@code AxonServerEventStore} asks for their snapshot
     * filters): so it is asked at the first phase of start, once every module is initialized, and before any
     * repository is built (Axon subscribes the aggregates' command handlers in a later phase).
     */
    private static void routeAggregatesThroughRing(Configuration configuration) {
        configuration.onStart(Integer.MIN_VALUE, () -> {
            RingCommandBus ring = RingCommandBus.localRingOf(configuration.commandBus());
            if (ring != null) {
                routeAggregates(configuration, () -> ring);
            }
        });
    }

    /**
     * Routes every aggregate of an Axon configuration that is being initialized through a ring, as this module does
     * for a configuration whose command bus is a {@link RingCommandBus}: event-sourced aggregates get a ring
     * repository; JPA entities and aggregates configured with a repository of their own keep it, and their commands
     * are routed by aggregate. For integrations whose ring is not the configuration's command bus itself (the Spring
     * Boot support, where a bean post-processor may have wrapped it).
     *
     * @param configuration the configuration, from an {@code onInitialize} handler
     * @param ring          gives the ring; not called before the first repository is built or the configuration
     *                      starts, so that the bus need not exist yet
     */
    @SuppressWarnings({"rawtypes", "unchecked"})
    public static void routeAggregates(Configuration configuration, Supplier<RingCommandBus> ring) {
        for (AggregateConfigurer aggregate : configuration.findModules(AggregateConfigurer.class)) {
            routeAggregate(ring, aggregate, configuration);
        }
    }

    private static <A> void routeAggregate(Supplier<RingCommandBus> ring, AggregateConfigurer<A> aggregate,
                                           Configuration configuration) {
        Class<A> type = aggregate.aggregateType();
        if (isJpaEntity(type)) {
            logger.info("Aggregate [{}] is a JPA entity: it keeps its own repository; each of its commands runs whole "
                                + "on the handler thread that owns its aggregate, in a transaction of its own",
                        type.getName());
            OwnRepositoryAggregates.routeAtStart(ring, aggregate, configuration);
            return;
        }
        if (AggregateConfigurerSettings.hasOwnRepository(aggregate)) {
            logger.info("Aggregate [{}] is configured with a repository of its own: it keeps it; each of its commands "
                                + "runs whole on the handler thread that owns its aggregate, in a transaction of its "
                                + "own", type.getName());
            OwnRepositoryAggregates.routeAtStart(ring, aggregate, configuration);
            return;
        }
        aggregate.configureRepository(c -> {
            AggregateConfigurerSettings.requireRingCompatible(aggregate);
            return ring.get().aggregates().createRepository(type, AggregateConfigurerSettings.model(aggregate),
                                                            aggregate.aggregateFactory(), c,
                                                            AggregateConfigurerSettings.snapshotTrigger(aggregate),
                                                            AggregateConfigurerSettings.commandTargetResolver(aggregate));
        });
    }

    /**
     * @param type an aggregate type
     * @return true when it is mapped with JPA ({@code @Entity}, jakarta or javax): such aggregates keep the
     * repository they were configured with
     */
    static boolean isJpaEntity(Class<?> type) {
        for (Annotation annotation : type.getAnnotations()) {
            String name = annotation.annotationType().getName();
            if (name.equals("jakarta.persistence.Entity") || name.equals("javax.persistence.Entity")) {
                return true;
            }
        }
        return false;
    }
}
