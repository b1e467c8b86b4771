package io.github.ringbus;

import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.RepositoryProvider;
import org.axonframework.modelling.command.inspection.AggregateMetaModelFactory;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;

import java.util.Map;
import java.util.Objects;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;

/**
 * The aggregate types whose commands a bus runs: builds each event-sourced type's {@link RingRepository} and routes
 * its commands to it, and routes the commands of types that keep a repository of their own by aggregate.
 * <p>
 * Registration happens while an application is configured (Axon's configuration, Spring, or
 * {@link RingCommandBus#registerAggregate}); it may run on any thread, before or after the bus starts.
 * <p>
 * Tests: {@code AxonConfigurationTest}, {@code model.HandSubscribedAggregateHandlerTest}.
 */
final class RingAggregates {

    private final CommandRoutes routes;
    private final EventStore eventStore;
    private final int cacheSize;
    /** The bus's threads reading missing aggregates ahead of the preload stage. */
    private final ColdReads coldReads;
    /** The bus's read transaction manager: each read of an aggregate runs in one transaction of it. */
    private final TransactionManager readTransactions;
    private final LongSupplier completedSequence;
    /** The bus's requests to drop its cached aggregates. */
    private final CacheEvictions evictions = new CacheEvictions();
    private final OffPipelineSnapshots snapshots;
    /** The bus's snapshot trigger, for aggregates without their own; its snapshots are taken on {@link #snapshots}. */
    private final SnapshotTriggerDefinition busSnapshotTrigger;
    /** The bus's command target resolver, for aggregates whose configuration gives none. */
    private final CommandTargetResolver busTargetResolver;
    /** Puts messages sent to an aggregate outside a command (deadlines) in the ring. */
    private final BiConsumer<CommandMessage<?>, CommandCallback<Object, Object>> delivery;
    /** Lends a handler an aggregate its command was not routed to (the bus's {@link NestedDispatch}). */
    private final RingRepository.Lender lender;
    /** Waits for the commands put in the ring so far (the bus's {@code Pipeline}). */
    private final RingRepository.CommandsSoFar commandsSoFar;

    RingAggregates(CommandRoutes routes, EventStore eventStore, int cacheSize, ColdReads coldReads,
                   TransactionManager readTransactions, LongSupplier completedSequence,
                   OffPipelineSnapshots snapshots, SnapshotTriggerDefinition busSnapshotTrigger,
                   CommandTargetResolver busTargetResolver,
                   BiConsumer<CommandMessage<?>, CommandCallback<Object, Object>> delivery,
                   RingRepository.Lender lender, RingRepository.CommandsSoFar commandsSoFar) {
        this.lender = Objects.requireNonNull(lender, "lender");
        this.commandsSoFar = Objects.requireNonNull(commandsSoFar, "commandsSoFar");
        this.routes = routes;
        this.eventStore = eventStore;
        this.cacheSize = cacheSize;
        this.coldReads = coldReads;
        this.readTransactions = readTransactions;
        this.completedSequence = completedSequence;
        this.snapshots = snapshots;
        this.busSnapshotTrigger = busSnapshotTrigger;
        this.busTargetResolver = busTargetResolver;
        this.delivery = delivery;
    }

    /**
     * @return the requests to drop the cached aggregates of every repository of this bus
     */
    CacheEvictions evictions() {
        return evictions;
    }

    /**
     * Creates the repository of an event-sourced aggregate type and routes its commands through the ring. Axon's
     * {@code AggregateAnnotationCommandHandler} must be built on this repository and subscribed to the bus;
     * {@link #registerAggregate} does both.
     *
     * @param model              the aggregate's model
     * @param aggregateFactory   creates empty aggregate roots to replay events on
     * @param repositoryProvider gives aggregates access to other repositories (may be null)
     * @param targetResolver     the resolver the aggregate's command handler uses, so that the preload stage finds
     *                           the same target
     * @param snapshotTrigger    the aggregate's own snapshot trigger definition, or {@link NoSnapshotTriggerDefinition}
     *                           (or null) for the bus's; its snapshots are taken on the bus's snapshot thread
     * @param <A>                the aggregate type
     * @return the repository
     */
    <A> RingRepository<A> createRepository(AggregateModel<A> model,
                                           AggregateFactory<A> aggregateFactory,
                                           RepositoryProvider repositoryProvider,
                                           CommandTargetResolver targetResolver,
                                           SnapshotTriggerDefinition snapshotTrigger) {
        SnapshotTriggerDefinition trigger = snapshotTrigger == null
                                            || snapshotTrigger instanceof NoSnapshotTriggerDefinition
                ? busSnapshotTrigger
                : snapshots.offPipeline(snapshotTrigger);
        RingRepository<A> repository = new RingRepository<>(
                model, aggregateFactory, eventStore, repositoryProvider, trigger,
                cacheSize, completedSequence, targetResolver, evictions, coldReads, readTransactions);
        repository.deliverThrough(delivery);
        repository.awaitCommandsThrough(commandsSoFar);
        repository.lendThrough(lender);
        routes.register(repository);
        return repository;
    }

    /**
     * Creates the repository of an aggregate type of an Axon configuration, on the model Axon built for it (with its
     * polymorphic subtypes) or, when that cannot be read, one built through the configured
     * {@link AggregateMetaModelFactory}, parameter resolvers and handler definitions.
     *
     * @param axonsModel      the model of the aggregate's {@code AggregateConfigurer}, which Axon's command handler of
     *                        the aggregate uses too; null to build one (without subtypes). A model factory shared by
     *                        the configuration (Spring's) caches the first model it builds per root type: building a
     *                        root-only one here would take the subtypes' handlers from Axon's handler too
     *
     * @param snapshotTrigger the aggregate's own snapshot trigger definition ({@code configureSnapshotTrigger},
     *                        {@code @Aggregate(snapshotTriggerDefinition = ...)}), or {@link NoSnapshotTriggerDefinition}
     *                        for the bus's
     * @param targetResolver  the aggregate's own command target resolver ({@code configureCommandTargetResolver},
     *                        {@code @Aggregate(commandTargetResolver = ...)}); null for the configuration's (or the
     *                        bus's)
     */
    <A> RingRepository<A> createRepository(Class<A> aggregateType,
                                           AggregateModel<A> axonsModel,
                                           AggregateFactory<A> aggregateFactory,
                                           Configuration configuration,
                                           SnapshotTriggerDefinition snapshotTrigger,
                                           CommandTargetResolver targetResolver) {
        AggregateModel<A> model = axonsModel != null ? axonsModel : configuration.getComponent(
                AggregateMetaModelFactory.class,
                () -> new AnnotatedAggregateMetaModelFactory(configuration.parameterResolverFactory(),
                                                             configuration.handlerDefinition(aggregateType))
        ).createModel(aggregateType);
        CommandTargetResolver resolver = targetResolver != null
                ? targetResolver
                : configuration.getComponent(CommandTargetResolver.class, () -> busTargetResolver);
        return createRepository(model, aggregateFactory, configuration::repository, resolver, snapshotTrigger);
    }

    /**
     * Routes the commands of an aggregate type that keeps a repository of its own by aggregate: a state-stored
     * aggregate (a JPA entity with Axon's {@code GenericJpaRepository}, whose {@code LockingRepository} locks each
     * aggregate it loads), or any aggregate whose repository is not a {@link RingRepository}. Its command handler
     * (Axon's {@code AggregateAnnotationCommandHandler} on its own repository) is subscribed to the bus as usual.
     * <p>
     * Each of its commands goes to the handler thread that owns its target identifier, so one aggregate's commands
     * run one at a time in dispatch order, and runs there whole, as on Axon's {@code SimpleCommandBus}: in a Unit of
     * Work of its own with a transaction of the bus's {@code TransactionManager}, the repository loads the aggregate
     * (taking its lock), the handler runs, the repository saves it, its events are appended and published through
     * the event bus, the transaction commits and the lock is released, all on that thread, before it takes its next
     * command. Its entity changes and its events commit together or not at all. Such commands get no group commit,
     * and hold up the other commands of their handler thread while they wait for the database.
     *
     * @param model          the aggregate's model (its command handlers)
     * @param targetResolver the resolver the aggregate's command handler finds targets with
     * @throws org.axonframework.common.AxonConfigurationException when another aggregate type already handles one
     *                                                             of its commands, or a ring repository routes one
     */
    void registerOwnRepositoryAggregate(AggregateModel<?> model, CommandTargetResolver targetResolver) {
        Objects.requireNonNull(model, "model must not be null");
        Objects.requireNonNull(targetResolver, "targetResolver must not be null");
        routes.registerOwnRepository(model.entityClass(), AggregateCommandNames.of(model), targetResolver);
    }

    /**
     * A handler of Axon's {@code AggregateAnnotationCommandHandler} subscribed by hand (without an Axon configuration)
     * over a repository that is not a ring repository (Axon's {@code EventSourcingRepository}, a
     * {@code GenericJpaRepository}): its command is routed by aggregate, as the commands of an aggregate that keeps a
     * repository of its own, and each runs whole on the handler thread that owns its aggregate, as on
     * {@code SimpleCommandBus} ({@link WholeCommandRunner}): the repository's lock is taken and released on that
     * thread, a JPA repository finds the transaction of its own command. A command already routed (a ring
     * aggregate's, or a configured aggregate's of its own repository) is left as it is.
     */
    void routeHandSubscribed(String commandName, Object handler) {
        AxonInternals.AggregateHandler aggregate = AxonInternals.aggregateHandlerOf(handler);
        if (aggregate == null || aggregate.repository() instanceof RingRepository<?>
                || routes.aggregateRouteFor(commandName) != null || routes.ownRepositoryRouteFor(commandName) != null) {
            return;
        }
        routes.registerOwnRepository(aggregate.aggregateType(), Map.of(commandName, aggregate.creates()),
                                     aggregate.targetResolver());
    }

    /**
     * Routes an annotated event-sourced aggregate's commands through the bus without an Axon configuration: creates
     * its repository and subscribes Axon's {@code AggregateAnnotationCommandHandler} for it to the bus.
     */
    <A> RingRepository<A> registerAggregate(Class<A> aggregateType, CommandBus bus) {
        AggregateModel<A> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(aggregateType);
        return registerAggregate(aggregateType, model, new GenericAggregateFactory<>(model), bus);
    }

    /** As {@link #registerAggregate(Class, CommandBus)}, with the aggregate's model and factory given. */
    <A> RingRepository<A> registerAggregate(Class<A> aggregateType, AggregateModel<A> model,
                                            AggregateFactory<A> aggregateFactory, CommandBus bus) {
        RingRepository<A> repository = createRepository(model, aggregateFactory, routes.repositories(),
                                                        busTargetResolver, NoSnapshotTriggerDefinition.INSTANCE);
        AggregateAnnotationCommandHandler.<A>builder()
                                         .aggregateType(aggregateType)
                                         .aggregateModel(model)
                                         .repository(repository)
                                         .commandTargetResolver(busTargetResolver)
                                         .build()
                                         .subscribe(bus);
        return repository;
    }
}
