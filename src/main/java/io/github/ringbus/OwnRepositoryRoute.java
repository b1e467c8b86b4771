package io.github.ringbus;

import org.axonframework.modelling.command.CommandTargetResolver;

import java.util.Objects;

/**
 * The claim on one command name of an aggregate type that keeps a repository of its own rather than a ring
 * repository: a state-stored aggregate (a JPA entity with Axon's {@code GenericJpaRepository}, a
 * {@code LockingRepository}), or, under Spring, one whose {@code @Aggregate} names a repository bean. The preload stage resolves such a command's target with the aggregate's resolver and assigns it to
 * the handler thread that owns that identifier; the handler thread runs the command whole, in a Unit of Work and a
 * transaction of its own (see {@link RingAggregates#registerOwnRepositoryAggregate}).
 * <p>
 * Tests: {@code OwnRepositoryAggregateTest}, {@code behaviour.HandBuiltRepositoryTest}.
 */
final class OwnRepositoryRoute {

    private final Class<?> aggregateType;
    private final CommandTargetResolver targetResolver;
    private final boolean createsAggregate;

    OwnRepositoryRoute(Class<?> aggregateType, CommandTargetResolver targetResolver, boolean createsAggregate) {
        this.aggregateType = Objects.requireNonNull(aggregateType, "aggregateType");
        this.targetResolver = Objects.requireNonNull(targetResolver, "targetResolver");
        this.createsAggregate = createsAggregate;
    }

    /**
     * @return the aggregate type that handles the command
     */
    Class<?> aggregateType() {
        return aggregateType;
    }

    /**
     * @return the resolver the aggregate's command handler finds the command's target with
     */
    CommandTargetResolver targetResolver() {
        return targetResolver;
    }

    /**
     * @return whether the command may create the aggregate (and so may name no existing one)
     */
    boolean createsAggregate() {
        return createsAggregate;
    }
}
