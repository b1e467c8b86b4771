package io.github.ringbus;

import io.github.ringbus.AxonInternals.AggregateSetting;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.common.caching.Cache;
import org.axonframework.common.lock.LockFactory;
import org.axonframework.common.lock.NullLockFactory;
import org.axonframework.common.lock.PessimisticLockFactory;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.config.Component;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.function.Function;

/**
 * The per-aggregate settings of an Axon {@link AggregateConfigurer} (set with its {@code configure...} methods, or
 * by Axon's Spring support from {@code @Aggregate}'s attributes) that matter to a ring aggregate, and what ringbus
 * does with each:
 * <ul>
 *   <li>snapshot trigger: honoured (its snapshots are taken off the pipeline);</li>
 *   <li>command target resolver: honoured (the preload stage finds the same target as Axon's command handler);</li>
 *   <li>cache: not used for a ring aggregate, and said so once at start-up (WARN). ringbus keeps ring aggregates in
 *       memory itself, on the preload stage's thread, in a cache that never evicts an aggregate with commands in
 *       flight; an Axon {@link Cache} cannot promise that. A cache is an optimization: an application that sets one
 *       on SimpleCommandBus starts on the ring, whose own cache takes its place;</li>
 *   <li>lock factory: one of Axon's in-process factories ({@link PessimisticLockFactory}, {@link NullLockFactory})
 *       is accepted as redundant, with a log line: a ring aggregate has one owning handler thread that runs its
 *       commands and deadlines one at a time, which is what such a lock gives. Any other lock factory is refused at
 *       start-up: it may promise more (say, a lock across processes) than ringbus can keep;</li>
 *   <li>repository: an aggregate configured with a repository of its own keeps it (see
 *       {@link #hasOwnRepository}).</li>
 * </ul>
 * Axon 4's {@code AggregateConfigurer} has no getters for these; {@link AxonInternals} reads its private components
 * (and {@link Component}'s builder function). Should a later Axon keep one elsewhere, each reading falls back to what
 * ringbus did before it read that setting, and a warning says so; {@link AxonInternals#unavailable()} lists them.
 * <p>
 * Tests: {@code AggregateSettingsTest}.
 */
final class AggregateConfigurerSettings {

    private static final Logger logger = LoggerFactory.getLogger(AggregateConfigurerSettings.class);
    private AggregateConfigurerSettings() {
    }

    /**
     * @param aggregate an aggregate's configurer, after the configuration was initialized
     * @return the snapshot trigger definition it was configured with; {@link NoSnapshotTriggerDefinition} when none
     * (the bus's then applies)
     */
    static SnapshotTriggerDefinition snapshotTrigger(AggregateConfigurer<?> aggregate) {
        Object definition = value(aggregate, AggregateSetting.SNAPSHOT_TRIGGER);
        return definition instanceof SnapshotTriggerDefinition trigger ? trigger : NoSnapshotTriggerDefinition.INSTANCE;
    }

    /**
     * @param aggregate an aggregate's configurer, after the configuration was initialized
     * @return the command target resolver Axon's command handler of the aggregate uses (its own, or the
     * configuration's), or null when it cannot be read
     */
    static CommandTargetResolver commandTargetResolver(AggregateConfigurer<?> aggregate) {
        Object resolver = value(aggregate, AggregateSetting.COMMAND_TARGET_RESOLVER);
        return resolver instanceof CommandTargetResolver targetResolver ? targetResolver : null;
    }

    /**
     * @param aggregate an aggregate's configurer, after the configuration was initialized
     * @return the model Axon built for the aggregate ({@code AggregateConfigurer}'s own, with the polymorphic subtypes
     * given to {@code withSubtypes}, the one Axon's command handler of the aggregate uses), or null when it cannot be
     * read
     */
    @SuppressWarnings("unchecked")
    static <A> AggregateModel<A> model(AggregateConfigurer<A> aggregate) {
        Object model = value(aggregate, AggregateSetting.META_MODEL);
        return model instanceof AggregateModel<?> aggregateModel ? (AggregateModel<A>) aggregateModel : null;
    }

    /**
     * Whether the aggregate was configured with a repository of its own ({@code configureRepository}, or
     * {@code @Aggregate(repository = ...)} in Spring): its repository component is built by another function than
     * the one of Axon's default configuration. Call it before routing the aggregate through the ring.
     *
     * @param aggregate an aggregate's configurer
     * @return true when its repository is not Axon's default one
     */
    static boolean hasOwnRepository(AggregateConfigurer<?> aggregate) {
        return isConfigured(aggregate, AggregateSetting.REPOSITORY);
    }

    /**
     * Refuses the per-aggregate settings a ring aggregate cannot honour, and logs the ones it replaces or makes
     * redundant.
     *
     * @param aggregate an aggregate's configurer, after the configuration was initialized
     * @throws AxonConfigurationException naming the setting, when the aggregate was given a lock factory that is not
     *                                    one of Axon's in-process ones
     */
    static void requireRingCompatible(AggregateConfigurer<?> aggregate) {
        String name = aggregate.aggregateType().getName();
        Object cache = value(aggregate, AggregateSetting.CACHE);
        if (cache != null) {
            logger.warn("Aggregate [{}] is configured with cache [{}] (AggregateConfigurer.configureCache, or "
                                + "@Aggregate(cache = ...)), which ringbus does not use for it: ringbus keeps ring "
                                + "aggregates in memory itself, in a cache that never evicts an aggregate with "
                                + "commands in flight, sized with RingCommandBus.builder().cacheSize(...) (property "
                                + "ringbus.cache-size)", name, cache.getClass().getName());
        }
        if (isConfigured(aggregate, AggregateSetting.LOCK_FACTORY)) {
            Object lockFactory = value(aggregate, AggregateSetting.LOCK_FACTORY);
            if (lockFactory instanceof PessimisticLockFactory || lockFactory instanceof NullLockFactory) {
                logger.info("Aggregate [{}] is configured with lock factory [{}], which ringbus does not need: each "
                                    + "ring aggregate is owned by one handler thread that runs its commands and "
                                    + "deadlines one at a time", name, lockFactory.getClass().getSimpleName());
            } else if (lockFactory instanceof LockFactory) {
                throw new AxonConfigurationException(
                        "Aggregate [" + name + "] is configured with lock factory [" + lockFactory + "] "
                                + "(AggregateConfigurer.configureLockFactory, or @Aggregate(lockFactory = ...)), "
                                + "which ringbus does not use: each ring aggregate is owned by one handler thread "
                                + "of one process, which runs its commands one at a time, and no lock is taken. "
                                + "Remove the lock factory setting of this aggregate, or set Axon's "
                                + "PessimisticLockFactory or NullLockFactory, which ringbus accepts as redundant");
            }
        }
    }

    private static Object value(AggregateConfigurer<?> aggregate, AggregateSetting setting) {
        if (!AxonInternals.available(setting)) {
            return null;
        }
        try {
            Component<?> component = AxonInternals.component(aggregate, setting);
            return component == null ? null : component.get();
        } catch (IllegalAccessException | RuntimeException e) {
            if (e instanceof AxonConfigurationException) {
                throw (AxonConfigurationException) e;
            }
            logger.warn("Cannot read setting [{}] of aggregate [{}]", setting, aggregate.aggregateType().getName(), e);
            return null;
        }
    }

    /** True when the component's builder function is not the one of a default configurer of the same aggregate. */
    private static boolean isConfigured(AggregateConfigurer<?> aggregate, AggregateSetting setting) {
        if (!AxonInternals.available(setting) || !AxonInternals.componentBuildersAvailable()) {
            return false;
        }
        try {
            Function<?, ?> configured = AxonInternals.builderOf(AxonInternals.component(aggregate, setting));
            Function<?, ?> fallback = AxonInternals.builderOf(AxonInternals.component(
                    AggregateConfigurer.defaultConfiguration(aggregate.aggregateType()), setting));
            return configured != null && fallback != null && configured.getClass() != fallback.getClass();
        } catch (IllegalAccessException | RuntimeException e) {
            logger.warn("Cannot tell whether setting [{}] of aggregate [{}] was configured", setting,
                        aggregate.aggregateType().getName(), e);
            return false;
        }
    }
}
