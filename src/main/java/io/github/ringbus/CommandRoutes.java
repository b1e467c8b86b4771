package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.common.Registration;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.RepositoryProvider;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Where each command goes: its subscribed handler, and, for commands an aggregate handles, the aggregate type's
 * repository and whether the command may create the aggregate (or, for an aggregate with a repository of its
 * own, its {@link OwnRepositoryRoute}). Read by the preload stage for every command (a
 * lookup allocates nothing); written when handlers subscribe and repositories register.
 * <p>
 * Tests: {@code behaviour.ExternalCommandHandlerTest}, {@code model.ExternalHandlerScenarioTest}.
 */
final class CommandRoutes {

    private static final Logger logger = LoggerFactory.getLogger(CommandRoutes.class);

    /** An aggregate type's claim on one command name. */
    static final class AggregateRoute {

        private final RingRepository<?> repository;
        private final boolean createsAggregate;
        private final boolean createsWithoutRead;

        AggregateRoute(RingRepository<?> repository, boolean createsAggregate, boolean createsWithoutRead) {
            this.repository = repository;
            this.createsAggregate = createsAggregate;
            this.createsWithoutRead = createsWithoutRead;
        }

        /**
         * @return the repository of the aggregate type that handles the command
         */
        RingRepository<?> repository() {
            return repository;
        }

        /**
         * @return whether the command may create the aggregate (and so may name no existing one)
         */
        boolean createsAggregate() {
            return createsAggregate;
        }

        /**
         * @return whether the command always creates the aggregate and the storage engine refuses a second creation,
         * so that its preload needs no read of the store ({@link RingRepository#createsWithoutRead})
         */
        boolean createsWithoutRead() {
            return createsWithoutRead;
        }
    }

    private final Map<String, MessageHandler<? super CommandMessage<?>>> handlers = new ConcurrentHashMap<>();
    private final Map<String, AggregateRoute> aggregateRoutes = new ConcurrentHashMap<>();
    private final Map<String, OwnRepositoryRoute> ownRepositoryRoutes = new ConcurrentHashMap<>();
    /**
     * The command names whose subscribed handler declares a transaction ({@link TransactionalHandlers}): they run
     * whole, in the command's transaction. Written when handlers subscribe.
     */
    private final java.util.Set<String> transactional = ConcurrentHashMap.newKeySet();
    /** The ring repositories registered here, in order; written when repositories register. */
    private final List<RingRepository<?>> repositories = new CopyOnWriteArrayList<>();

    /**
     * Subscribes a handler; a second subscription for the same command name replaces the first, as in Axon's
     * SimpleCommandBus with its default resolver, and is logged.
     */
    Registration subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        Objects.requireNonNull(commandName, "commandName must not be null");
        Objects.requireNonNull(handler, "handler must not be null");
        boolean declaresTransaction = TransactionalHandlers.declaresTransaction(handler, commandName);
        MessageHandler<? super CommandMessage<?>> previous = handlers.put(commandName, handler);
        if (previous != null && previous != handler) {
            logger.warn("A handler for command [{}] was replaced: [{}] replaces [{}]", commandName, handler, previous);
        }
        if (declaresTransaction) {
            if (transactional.add(commandName)) {
                logger.info("The handler of command [{}] declares a transaction (@Transactional): each such command "
                                    + "runs whole on its handler thread, in a transaction of the bus's transaction "
                                    + "manager with its events, once every earlier command completed, as on "
                                    + "SimpleCommandBus (no group commit)", commandName);
            }
        } else {
            transactional.remove(commandName);
        }
        return () -> {
            boolean removed = handlers.remove(commandName, handler);
            if (removed) {
                transactional.remove(commandName);
            }
            return removed;
        };
    }

    /**
     * @return true when the handler subscribed for the command name declares a transaction: its commands run whole
     *         ({@link TransactionalHandlers})
     */
    boolean runsInItsOwnTransaction(String commandName) {
        return transactional.contains(commandName);
    }

    /**
     * Routes every command the repository's aggregate type handles to that repository, and the messages its
     * {@code send} delivers to its aggregates (see {@link io.github.ringbus.MessageDelivery}).
     *
     * @throws AxonConfigurationException when another aggregate type already handles one of its commands, or one of
     *                                    them is routed as a command of an aggregate with a repository of its own
     */
    void register(RingRepository<?> repository) {
        for (Map.Entry<String, Boolean> command : repository.commandNames().entrySet()) {
            OwnRepositoryRoute ownRepository = ownRepositoryRoutes.get(command.getKey());
            if (ownRepository != null) {
                throw claimedBothWays(command.getKey(), repository.aggregateType(), ownRepository.aggregateType());
            }
            AggregateRoute route = new AggregateRoute(repository, command.getValue(),
                                                     repository.createsWithoutRead(command.getKey()));
            AggregateRoute existing = aggregateRoutes.putIfAbsent(command.getKey(), route);
            if (existing != null && existing.repository().aggregateType() != repository.aggregateType()) {
                throw new AxonConfigurationException(
                        "Command [" + command.getKey() + "] is handled by two aggregate types: ["
                                + existing.repository().aggregateType().getName() + "] and ["
                                + repository.aggregateType().getName() + "]");
            }
            aggregateRoutes.put(command.getKey(), route);
        }
        // Messages sent to the aggregates outside a command (deadlines) go through the ring as internal commands.
        aggregateRoutes.put(repository.delivery().commandName(), new AggregateRoute(repository, false, false));
        handlers.put(repository.delivery().commandName(), repository.delivery());
        repositories.add(repository);
    }

    /**
     * The ring repository whose aggregate a plain handler's command names: the only one, when one aggregate type runs
     * on the ring; else one that has the aggregate in memory; else, when {@code readStore}, the one whose type (or
     * polymorphic subtype) the event store has for the identifier. Never one learned from an earlier command of the
     * same name: one command class may load aggregates of several types, chosen by its content, and a guess would
     * read one type's events into another (Axon's {@code IncompatibleAggregateException}). The store's type costs a
     * read of the identifier's first events for each such command whose aggregate is not in memory, and each that
     * names an identifier of no aggregate (a read that finds nothing): the price of never preloading the wrong type.
     * Preload-stage thread only (it looks in the caches).
     *
     * @return the repository, or null when none is known to hold that aggregate
     * @throws Exception when the event store cannot be read
     */
    RingRepository<?> repositoryNamedBy(String identifier, boolean readStore) throws Exception {
        if (repositories.size() == 1) {
            return repositories.get(0);
        }
        for (int i = 0; i < repositories.size(); i++) {
            if (repositories.get(i).preloaded().inMemory(identifier)) {
                return repositories.get(i);
            }
        }
        if (!readStore || repositories.isEmpty()) {
            return null;
        }
        String type = repositories.get(0).storedTypeOf(identifier);
        for (int i = 0; type != null && i < repositories.size(); i++) {
            if (repositories.get(i).hasTypeName(type)) {
                return repositories.get(i);
            }
        }
        return null;
    }

    /**
     * The repositories registered here, for aggregates that create others ({@code AggregateLifecycle.createNew})
     * when no Axon configuration provides repositories.
     *
     * @return a provider of the ring repository of a registered aggregate type (or of its polymorphic root), or
     * null for a type no ring repository handles
     */
    RepositoryProvider repositories() {
        return new RepositoryProvider() {
            @Override
            @SuppressWarnings("unchecked")
            public <T> Repository<T> repositoryFor(Class<T> aggregateType) {
                for (AggregateRoute route : aggregateRoutes.values()) {
                    if (route.repository().aggregateType().isAssignableFrom(aggregateType)) {
                        return (Repository<T>) route.repository();
                    }
                }
                return null;
            }
        };
    }

    /**
     * Routes every command of an aggregate type that keeps a repository of its own (a state-stored one) by its target
     * aggregate, found with the given resolver.
     *
     * @param aggregateType  the aggregate type
     * @param commandNames   the names of its commands, each mapped to whether it may create the aggregate
     * @param targetResolver the resolver its command handler finds targets with
     * @throws AxonConfigurationException when another aggregate type already handles one of its commands, or a ring
     *                                    repository already routes one of them
     */
    void registerOwnRepository(Class<?> aggregateType, Map<String, Boolean> commandNames,
                                      CommandTargetResolver targetResolver) {
        for (Map.Entry<String, Boolean> command : commandNames.entrySet()) {
            String name = command.getKey();
            AggregateRoute ringRoute = aggregateRoutes.get(name);
            if (ringRoute != null) {
                throw claimedBothWays(name, ringRoute.repository().aggregateType(), aggregateType);
            }
            OwnRepositoryRoute existing = ownRepositoryRoutes.get(name);
            if (existing != null && existing.aggregateType() != aggregateType) {
                throw new AxonConfigurationException(
                        "Command [" + name + "] is handled by two aggregate types: ["
                                + existing.aggregateType().getName() + "] and [" + aggregateType.getName() + "]");
            }
            ownRepositoryRoutes.put(name, new OwnRepositoryRoute(aggregateType, targetResolver, command.getValue()));
        }
    }

    private static AxonConfigurationException claimedBothWays(String commandName, Class<?> ringAggregate,
                                                              Class<?> ownRepositoryAggregate) {
        return new AxonConfigurationException(
                "Command [" + commandName + "] is claimed by aggregate type [" + ringAggregate.getName()
                        + "] through a ring repository and by aggregate type [" + ownRepositoryAggregate.getName()
                        + "] with a repository of its own: each command runs one way or the other");
    }

    /**
     * @return the own-repository route of the command name, or null when no aggregate with a repository of its own
     * handles it
     */
    OwnRepositoryRoute ownRepositoryRouteFor(String commandName) {
        return ownRepositoryRoutes.get(commandName);
    }

    /**
     * @param commandName a command name no handler is subscribed for
     * @return the failure Axon's own buses report for it, with their message
     */
    static NoHandlerForCommandException noHandlerFor(String commandName) {
        return new NoHandlerForCommandException("No handler was subscribed for command [" + commandName + "].");
    }

    /**
     * @return the handler subscribed for the command name, or null
     */
    MessageHandler<? super CommandMessage<?>> handlerFor(String commandName) {
        return handlers.get(commandName);
    }

    /**
     * @return the aggregate route of the command name, or null when no ringbus aggregate handles it
     */
    AggregateRoute aggregateRouteFor(String commandName) {
        return aggregateRoutes.get(commandName);
    }
}
