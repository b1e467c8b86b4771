package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.WrappedCommandCallback;
import org.axonframework.commandhandling.callbacks.FailureLoggingCallback;
import org.axonframework.commandhandling.gateway.RetryingCallback;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Component;
import org.axonframework.eventhandling.AbstractEventBus;
import org.axonframework.eventsourcing.AbstractSnapshotTrigger;
import org.axonframework.eventsourcing.Snapshotter;
import org.axonframework.eventsourcing.eventstore.AbstractEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.AccessibleObject;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Every place ringbus depends on what Axon 4 does not make public, in one adapter. Each access is resolved once, when
 * this class loads; one that this Axon version does not offer is logged once with its consequence, listed by
 * {@link #unavailable()}, and answered with its fallback (ringbus then does what it did before it used the access).
 * {@code AxonInternalsTest} fails on an Axon version that takes any of them away.
 * <ol>
 *   <li>The class of the handler object Axon's {@code AggregateAnnotationCommandHandler} subscribes for an aggregate's
 *       instance commands (private to Axon), recognised by name: the preload stage invokes such commands on the
 *       preloaded aggregate directly. Fallback: commands go through Axon's handler, which loads the aggregate again.</li>
 *   <li>The protected {@code AbstractEventStore.storageEngine()}: tells whether a plain event store sits on Axon's
 *       in-memory engine, whose multi-event appends must be split. Fallback: one append per batch, with a warning.</li>
 *   <li>The private {@code snapshotter} of Axon's {@code AbstractSnapshotTrigger}: re-pointed so that snapshots are
 *       taken off the pipeline. Fallback: snapshots run where the application's snapshotter runs them.</li>
 *   <li>The private components of {@code AggregateConfigurer} (snapshot trigger, command target resolver, cache, lock
 *       factory, repository) and {@code Component}'s builder function: the per-aggregate settings ringbus honours or
 *       refuses ({@link AggregateConfigurerSettings}). Fallback per setting, see there.</li>
 *   <li>Axon's own storage engines (JDBC, JPA in both its packages, in-memory), recognised by class name, so that
 *       ringbus needs neither JPA API on its class path: what each does with a second creation of an aggregate
 *       decides whether a creation command may skip the read ({@link #isAxonStorageEngine}). Fallback: an engine not
 *       recognised is read, as any unknown engine.</li>
 *   <li>The private {@code maxGapOffset} of Axon's JDBC and JPA storage engines: how far several store threads may
 *       commit past one another's open transaction ({@link GapBound}). Fallback: Axon's default, 10,000. And their
 *       private {@code gapTimeout}: how long after its timestamp an event may be committed ({@link CommitDeadline}).
 *       Fallback: Axon's default, 60 s.</li>
 *   <li>The private resource key under which Axon's {@code UnitOfWorkTimeoutInterceptor} (Axon 4.11 on,
 *       {@code axon.timeout.*}) keeps a command's time limit in its root Unit of Work: ringbus ends the limit when the
 *       handler thread is done with the command ({@link #endTimeLimit}), so that it covers what that thread runs, as
 *       on {@code SimpleCommandBus}, and never fires on a handler thread that has gone on to other commands while the
 *       command waits for its batch's store. Absent where Axon has no such interceptor. Fallback: the limit runs until
 *       the command completes, and may warn about and interrupt an idle handler thread.</li>
 *   <li>The private fields through which Axon's wrapping callbacks ({@code WrappedCommandCallback}, which
 *       {@code CommandGateway.send} makes, {@code FailureLoggingCallback}, the gateway's {@code RetryingCallback})
 *       hold the callbacks they wrap ({@link #wrappedCallback}): a command dispatched on a callback thread with only
 *       Axon's callbacks is completed on the complete stage's thread, for that thread may be waiting for it
 *       ({@link CallbackThread}). Fallback: such a callback is handed to the callback thread, and a callback that
 *       waits there for a {@code CommandGateway.send} future of its own waits for ever.</li>
 *   <li>The private {@code target} of Axon's {@code AnnotationCommandHandlerAdapter} (the component an external command
 *       handler is): ringbus reads its class for a handler method that declares a transaction of its own
 *       ({@link TransactionalHandlers}), whose command then runs whole in the command's transaction, as on
 *       {@code SimpleCommandBus}. Fallback: such a command runs in the ring's group commit, and the handler's
 *       transaction is not the command's.</li>
 *   <li>The private {@code eventsKey} of Axon's {@code AbstractEventBus}: the resource under which an event bus (any
 *       of Axon's event stores) queues the events published in a Unit of Work. On an event store that is not a
 *       {@link RingEventStore}, a ring command's Unit of Work holds under that key a queue of its own
 *       ({@link #eventQueueKeyOf}), so that events a handler publishes on that store join the command's events in the
 *       order the handler produced them and are stored with its batch, as on {@code SimpleCommandBus}. Fallback: Axon
 *       appends them while the command prepares its commit, ahead of the command's own events, with a warning.</li>
 * </ol>
 * One more dependence is a copy of behaviour rather than an access: {@link InstanceCommandInvoker} does what Axon's
 * {@code AnnotatedAggregate.handle} does for aggregates without command handler interceptors or entity handlers;
 * {@code behaviour.AggregateInvocationTest} compares its results and failures with Axon's own path.
 * <p>
 * Thread-safe: immutable after class initialization.
 */
final class AxonInternals {

    private static final Logger logger = LoggerFactory.getLogger(AxonInternals.class);

    /** Name of the private class of Axon's instance command handlers (access 1). */
    static final String INSTANCE_COMMAND_HANDLER =
            AggregateAnnotationCommandHandler.class.getName() + "$AggregateCommandHandler";

    /** The settings of an {@code AggregateConfigurer} that ringbus reads (access 4). */
    enum AggregateSetting {
        SNAPSHOT_TRIGGER("snapshotTriggerDefinition", "every ring aggregate gets the bus's snapshot trigger"),
        COMMAND_TARGET_RESOLVER("commandTargetResolver",
                                "ring aggregates use the configuration's command target resolver, not their own"),
        CACHE("cache", "a cache configured for a ring aggregate is not detected (ringbus uses its own)"),
        LOCK_FACTORY("lockFactory", "a lock factory configured for a ring aggregate is not detected (ringbus uses "
                + "none)"),
        REPOSITORY("repository", "a repository configured for an aggregate is not detected: it is replaced by a ring "
                + "repository"),
        META_MODEL("metaModel", "a ring repository builds its aggregate's model without the polymorphic subtypes "
                + "(withSubtypes): their commands fail with no handler where the model factory is shared (Spring)");

        private final String field;
        private final String consequence;

        AggregateSetting(String field, String consequence) {
            this.field = field;
            this.consequence = consequence;
        }
    }

    /** Axon's storage engines whose behaviour on a second creation ringbus knows (access 5), by class name. */
    static final List<String> AXON_STORAGE_ENGINES = List.of(
            "org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine",
            "org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine",
            "org.axonframework.eventsourcing.eventstore.legacyjpa.JpaEventStorageEngine",
            "org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine");

    /** Engines whose tracking tokens never skip an event that is committed late: in memory, Axon Server. */
    static final List<String> GAP_FREE_STORAGE_ENGINES = List.of(
            "org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine",
            "org.axonframework.axonserver.connector.event.axon.AxonServerEventStore$AxonIQEventStorageEngine");
    /** The field of Axon's gap-aware engines (the first three of {@link #AXON_STORAGE_ENGINES}) read by access 6. */
    static final String MAX_GAP_OFFSET = "maxGapOffset";
    static final String GAP_TIMEOUT = "gapTimeout";

    private static final List<String> UNAVAILABLE;
    private static final Field JDBC_MAX_GAP_OFFSET;
    private static final Field JDBC_GAP_TIMEOUT;
    private static final Method STORAGE_ENGINE;
    private static final Field TRIGGER_SNAPSHOTTER;
    private static final Field[] AGGREGATE_SETTINGS = new Field[AggregateSetting.values().length];
    private static final Field COMPONENT_BUILDER;
    /** {@code AggregateAnnotationCommandHandler}'s repository and target resolver (access 8). */
    private static final Field HANDLER_REPOSITORY;
    private static final Field HANDLER_TARGET_RESOLVER;
    /** The component behind an external command handler (access 10). */
    private static final Field ADAPTER_TARGET;
    /** Axon's handlers that {@code AggregateAnnotationCommandHandler.subscribe} subscribes, by simple name, each
     * mapped to whether it may create its aggregate (access 8). */
    private static final Map<String, Boolean> AGGREGATE_HANDLER_CLASSES = Map.of(
            "AggregateConstructorCommandHandler", true, "AlwaysCreateAggregateCommandHandler", true,
            "AggregateCreateOrUpdateCommandHandler", true, "AggregateCommandHandler", false);
    /**
     * Axon's wrapping callbacks and the private fields that hold what they wrap (access 9), each field null when
     * unavailable: {@code WrappedCommandCallback}'s two, {@code FailureLoggingCallback}'s and
     * {@code RetryingCallback}'s one.
     */
    private static final Field WRAPPED_OUTER;
    private static final Field WRAPPED_INNER;
    private static final Field FAILURE_LOGGING_DELEGATE;
    private static final Field RETRYING_DELEGATE;
    private static final Field EVENTS_KEY;
    /** Axon's class of a running time limit, in Axon versions with Unit of Work timeouts (access 7). */
    static final String TIME_LIMITED_TASK = "org.axonframework.messaging.timeout.AxonTimeLimitedTask";
    private static final String TIMEOUT_INTERCEPTOR = "org.axonframework.messaging.timeout.UnitOfWorkTimeoutInterceptor";
    private static final String TIME_LIMIT_KEY;
    private static final Method COMPLETE_TIME_LIMIT;

    static {
        List<String> unavailable = new ArrayList<>();
        STORAGE_ENGINE = (Method) access(unavailable, "AbstractEventStore.storageEngine()",
                                         "batches of a plain event store on Axon's in-memory engine are appended in "
                                                 + "one call; tracking processors may skip events",
                                         () -> AbstractEventStore.class.getDeclaredMethod("storageEngine"));
        TRIGGER_SNAPSHOTTER = (Field) access(unavailable, "AbstractSnapshotTrigger.snapshotter",
                                             "snapshots run wherever the application's snapshotter runs them",
                                             () -> AbstractSnapshotTrigger.class.getDeclaredField("snapshotter"));
        for (AggregateSetting setting : AggregateSetting.values()) {
            AGGREGATE_SETTINGS[setting.ordinal()] = (Field) access(
                    unavailable, "AggregateConfigurer." + setting.field, setting.consequence,
                    () -> AggregateConfigurer.class.getDeclaredField(setting.field));
        }
        COMPONENT_BUILDER = (Field) access(unavailable, "Component.builderFunction",
                                           "a lock factory or repository configured per aggregate is not detected",
                                           () -> Component.class.getDeclaredField("builderFunction"));
        String handSubscribed = "a handler of Axon's AggregateAnnotationCommandHandler subscribed by hand over a "
                + "repository of Axon's runs in the ring's Unit of Work, not whole on its aggregate's thread";
        HANDLER_REPOSITORY = (Field) access(unavailable, "AggregateAnnotationCommandHandler.repository", handSubscribed,
                                            () -> AggregateAnnotationCommandHandler.class.getDeclaredField("repository"));
        HANDLER_TARGET_RESOLVER = (Field) access(unavailable, "AggregateAnnotationCommandHandler.commandTargetResolver",
                                                 handSubscribed, () -> AggregateAnnotationCommandHandler.class
                                                         .getDeclaredField("commandTargetResolver"));
        ADAPTER_TARGET = (Field) access(unavailable, "AnnotationCommandHandlerAdapter.target",
                                        "an external command handler declaring @Transactional runs in the ring's "
                                                + "group commit, its transaction not the command's",
                                        () -> org.axonframework.commandhandling.AnnotationCommandHandlerAdapter.class
                                                .getDeclaredField("target"));
        JDBC_MAX_GAP_OFFSET = (Field) access(unavailable, "JdbcEventStorageEngine.maxGapOffset",
                                             "several store threads assume Axon's default maxGapOffset (10,000)",
                                             () -> org.axonframework.eventsourcing.eventstore.jdbc
                                                     .JdbcEventStorageEngine.class.getDeclaredField(MAX_GAP_OFFSET));
        JDBC_GAP_TIMEOUT = (Field) access(unavailable, "JdbcEventStorageEngine.gapTimeout",
                                          "the store stage assumes Axon's default gapTimeout (60 s)",
                                          () -> org.axonframework.eventsourcing.eventstore.jdbc
                                                  .JdbcEventStorageEngine.class.getDeclaredField(GAP_TIMEOUT));
        String wrappers = "a command dispatched on a callback thread with a callback of Axon's gateway is completed "
                + "on the callback thread, and a callback that waits there for such a command waits for ever";
        WRAPPED_OUTER = (Field) access(unavailable, "WrappedCommandCallback.outerCallback", wrappers,
                                       () -> WrappedCommandCallback.class.getDeclaredField("outerCallback"));
        WRAPPED_INNER = (Field) access(unavailable, "WrappedCommandCallback.innerCallback", wrappers,
                                       () -> WrappedCommandCallback.class.getDeclaredField("innerCallback"));
        FAILURE_LOGGING_DELEGATE = (Field) access(unavailable, "FailureLoggingCallback.delegate", wrappers,
                                                  () -> FailureLoggingCallback.class.getDeclaredField("delegate"));
        RETRYING_DELEGATE = (Field) access(unavailable, "RetryingCallback.delegate", wrappers,
                                           () -> RetryingCallback.class.getDeclaredField("delegate"));
        EVENTS_KEY = (Field) access(unavailable, "AbstractEventBus.eventsKey",
                                    "events a handler publishes on an event store that is not a RingEventStore are "
                                            + "appended by Axon ahead of the command's own events",
                                    () -> AbstractEventBus.class.getDeclaredField("eventsKey"));
        String timeLimitKey = null;
        Method completeTimeLimit = null;
        if (classExists(TIMEOUT_INTERCEPTOR)) {
            Field key = (Field) access(unavailable, "UnitOfWorkTimeoutInterceptor.TRANSACTION_TIME_LIMIT_RESOURCE_KEY",
                                       "Axon's Unit of Work timeout runs until a ring command completes, and may warn "
                                               + "about and interrupt an idle handler thread",
                                       () -> Class.forName(TIMEOUT_INTERCEPTOR)
                                                  .getDeclaredField("TRANSACTION_TIME_LIMIT_RESOURCE_KEY"));
            try {
                timeLimitKey = key == null ? null : (String) key.get(null);
                completeTimeLimit = Class.forName(TIME_LIMITED_TASK).getMethod("complete");
                completeTimeLimit.setAccessible(true); // a public method of a class private to its package
            } catch (ReflectiveOperationException | RuntimeException e) {
                timeLimitKey = null;
                unavailable.add(TIME_LIMITED_TASK + ".complete()");
                logger.warn("Cannot end Axon's Unit of Work time limits ({}): they may interrupt idle handler threads",
                            e.toString());
            }
        }
        TIME_LIMIT_KEY = timeLimitKey;
        COMPLETE_TIME_LIMIT = completeTimeLimit;
        if (!classExists(INSTANCE_COMMAND_HANDLER)) {
            unavailable.add(INSTANCE_COMMAND_HANDLER);
            logger.warn("This Axon version has no class {}: instance commands go through Axon's handler, which loads "
                                + "each aggregate again", INSTANCE_COMMAND_HANDLER);
        }
        UNAVAILABLE = List.copyOf(unavailable);
    }

    private AxonInternals() {
    }

    /**
     * @return the accesses this Axon version does not offer (empty when all work); a test fails on any
     */
    static List<String> unavailable() {
        return UNAVAILABLE;
    }

    /**
     * @param handlerType the class of a subscribed command handler
     * @return true for Axon's handler of an aggregate's instance commands
     */
    static boolean isInstanceCommandHandler(Class<?> handlerType) {
        return handlerType.getName().equals(INSTANCE_COMMAND_HANDLER);
    }

    /**
     * What one of Axon's wrapping callbacks wraps (access 9): the exact classes {@code WrappedCommandCallback} (index
     * 0 its outer callback, 1 its inner one), {@code FailureLoggingCallback} and {@code RetryingCallback} (index 0).
     *
     * @param callback a callback
     * @param index    which of the wrapped callbacks
     * @return the wrapped callback; null when {@code callback} wraps none there (a {@code FailureLoggingCallback} that
     * only logs), is none of those classes, or cannot be read on this Axon version (see {@link #isWrappingCallback})
     */
    static CommandCallback<?, ?> wrappedCallback(CommandCallback<?, ?> callback, int index) {
        if (!isWrappingCallback(callback)) {
            return null;
        }
        Class<?> type = callback.getClass();
        Field field = null;
        if (type == WrappedCommandCallback.class) {
            field = index == 0 ? WRAPPED_OUTER : index == 1 ? WRAPPED_INNER : null;
        } else if (index == 0 && type == FailureLoggingCallback.class) {
            field = FAILURE_LOGGING_DELEGATE;
        } else if (index == 0 && type == RetryingCallback.class) {
            field = RETRYING_DELEGATE;
        }
        if (field == null) {
            return null;
        }
        try {
            return (CommandCallback<?, ?>) field.get(callback);
        } catch (IllegalAccessException | RuntimeException unreadable) {
            return null;
        }
    }

    /**
     * @param callback a callback
     * @return true when it is one of Axon's wrapping callbacks (exact class) and what it wraps can be read (access 9)
     */
    static boolean isWrappingCallback(CommandCallback<?, ?> callback) {
        Class<?> type = callback.getClass();
        return type == WrappedCommandCallback.class ? WRAPPED_OUTER != null && WRAPPED_INNER != null
                : type == FailureLoggingCallback.class ? FAILURE_LOGGING_DELEGATE != null
                : type == RetryingCallback.class && RETRYING_DELEGATE != null;
    }

    /**
     * One of the handlers {@code AggregateAnnotationCommandHandler.subscribe} subscribes (access 8): the aggregate
     * command handler it belongs to, what that handler's commands load and create the aggregate with, and where its
     * target is found.
     *
     * @param repository     the aggregate's repository
     * @param targetResolver the command target resolver of the aggregate's command handler
     * @param aggregateType  the class that declares the handler's method (the aggregate, or a polymorphic subtype)
     * @param creates        whether the handler may create the aggregate
     */
    record AggregateHandler(Object repository, CommandTargetResolver targetResolver, Class<?> aggregateType,
                            boolean creates) {
    }

    /**
     * @param handler a subscribed command handler
     * @return what it is, when it is one of Axon's aggregate command handlers; otherwise, or when this Axon version
     *         does not let it be read, null
     */
    static AggregateHandler aggregateHandlerOf(Object handler) {
        Class<?> type = handler.getClass();
        Boolean creates = AGGREGATE_HANDLER_CLASSES.get(type.getSimpleName());
        if (creates == null || type.getEnclosingClass() != AggregateAnnotationCommandHandler.class
                || HANDLER_REPOSITORY == null || HANDLER_TARGET_RESOLVER == null) {
            return null;
        }
        try {
            Object owner = null;
            Object member = null;
            for (Field field : type.getDeclaredFields()) {
                field.setAccessible(true);
                if (field.getType() == AggregateAnnotationCommandHandler.class) {
                    owner = field.get(handler); // the enclosing instance of the inner class
                } else if (field.getName().equals("handler")) {
                    member = field.get(handler);
                }
            }
            if (owner == null) {
                return null;
            }
            Class<?> declaring = member instanceof org.axonframework.messaging.annotation.MessageHandlingMember<?> m
                    ? m.declaringClass() : Object.class;
            return new AggregateHandler(HANDLER_REPOSITORY.get(owner),
                                        (CommandTargetResolver) HANDLER_TARGET_RESOLVER.get(owner), declaring,
                                        creates);
        } catch (ReflectiveOperationException | RuntimeException unreadable) {
            logger.warn("Cannot read Axon's aggregate command handler [{}]: {}", type.getName(),
                        unreadable.toString());
            return null;
        }
    }

    /**
     * @param handler a subscribed command handler
     * @return the component whose annotated methods it calls, when it is Axon's
     *         {@code AnnotationCommandHandlerAdapter} (an external command handler); otherwise, or when this Axon
     *         version does not let it be read, null
     */
    static Object annotatedHandlerTarget(Object handler) {
        if (ADAPTER_TARGET == null
                || !(handler instanceof org.axonframework.commandhandling.AnnotationCommandHandlerAdapter<?>)) {
            return null;
        }
        try {
            return ADAPTER_TARGET.get(handler);
        } catch (ReflectiveOperationException | RuntimeException unreadable) {
            logger.warn("Cannot read Axon's command handler adapter [{}]: {}", handler, unreadable.toString());
            return null;
        }
    }

    /**
     * @param engine a storage engine, or null
     * @return true when it is one of {@link #AXON_STORAGE_ENGINES} or a subclass of one
     */
    static boolean isAxonStorageEngine(EventStorageEngine engine) {
        for (Class<?> type = engine == null ? null : engine.getClass(); type != null; type = type.getSuperclass()) {
            if (AXON_STORAGE_ENGINES.contains(type.getName())) {
                return true;
            }
        }
        return false;
    }

    /**
     * @param engine a storage engine, or null
     * @return true when its tracking tokens never skip an event committed after later ones (Axon's in-memory engine,
     * Axon Server's), or a subclass of one
     */
    static boolean isGapFree(EventStorageEngine engine) {
        for (Class<?> type = engine == null ? null : engine.getClass(); type != null; type = type.getSuperclass()) {
            if (GAP_FREE_STORAGE_ENGINES.contains(type.getName())) {
                return true;
            }
        }
        return false;
    }

    /**
     * @param engine a storage engine, or null
     * @return the {@code maxGapOffset} of one of Axon's JDBC or JPA engines (or a subclass); -1 for another engine, or
     * when it cannot be read
     */
    static int maxGapOffsetOf(EventStorageEngine engine) {
        return intOfAxonsGapAwareEngine(engine, JDBC_MAX_GAP_OFFSET, MAX_GAP_OFFSET, -1,
                                        "several store threads assume Axon's default (10,000)");
    }

    /**
     * @param engine a storage engine, or null
     * @return the {@code gapTimeout} in milliseconds of one of Axon's JDBC or JPA engines (or a subclass): how old an
     * event may be when a tracking reader meets it before the reader gives up on the gaps behind it; 0 when it cannot
     * be read; -1 for another engine (which has no such timeout)
     */
    static int gapTimeoutOf(EventStorageEngine engine) {
        return intOfAxonsGapAwareEngine(engine, JDBC_GAP_TIMEOUT, GAP_TIMEOUT, 0,
                                        "the store stage assumes Axon's default (60 s)");
    }

    /**
     * An {@code int} field of one of Axon's JDBC or JPA engines (or a subclass).
     *
     * @param jdbcField   the JDBC engine's field, resolved when this class loaded (null when it could not be)
     * @param name        the field's name in the JPA engines
     * @param unreadable  what is answered when the field cannot be read
     * @param consequence what follows when it cannot, for the log
     * @return its value; {@code unreadable} when it cannot be read; -1 for another engine
     */
    private static int intOfAxonsGapAwareEngine(EventStorageEngine engine, Field jdbcField, String name,
                                                int unreadable, String consequence) {
        for (Class<?> type = engine == null ? null : engine.getClass(); type != null; type = type.getSuperclass()) {
            int at = AXON_STORAGE_ENGINES.indexOf(type.getName());
            if (at >= 0 && at < 3) { // JDBC, JPA, legacy JPA
                try {
                    Field field = at == 0 ? jdbcField : type.getDeclaredField(name);
                    if (field == null) {
                        return unreadable;
                    }
                    field.setAccessible(true);
                    return field.getInt(engine);
                } catch (ReflectiveOperationException | RuntimeException e) {
                    logger.warn("Cannot read the {} of storage engine [{}] ({}): {}", name, engine.getClass().getName(),
                                e.toString(), consequence);
                    return unreadable;
                }
            }
        }
        return -1;
    }

    /**
     * @param eventStore an event store
     * @return the storage engine behind an Axon {@code AbstractEventStore}; null for another store, or when this Axon
     * version does not let it be read
     */
    static EventStorageEngine storageEngineOf(EventStore eventStore) {
        if (STORAGE_ENGINE == null || !(eventStore instanceof AbstractEventStore)) {
            return null;
        }
        try {
            return (EventStorageEngine) STORAGE_ENGINE.invoke(eventStore);
        } catch (ReflectiveOperationException | RuntimeException e) {
            logger.warn("Cannot read the storage engine of event store [{}]", eventStore.getClass().getName(), e);
            return null;
        }
    }

    /**
     * @param eventStore an event store
     * @return the key of the Unit of Work resource under which Axon's event bus queues the events published on
     * {@code eventStore} in that Unit of Work (access 10); null when the store is not one of Axon's event buses, or
     * this Axon version does not let the key be read
     */
    static String eventQueueKeyOf(EventStore eventStore) {
        if (EVENTS_KEY == null || !(eventStore instanceof AbstractEventBus)) {
            return null;
        }
        try {
            return (String) EVENTS_KEY.get(eventStore);
        } catch (IllegalAccessException | RuntimeException e) {
            logger.warn("Cannot read the event queue key of event store [{}]", eventStore.getClass().getName(), e);
            return null;
        }
    }

    /**
     * @param trigger one of Axon's snapshot triggers
     * @return the snapshotter it calls; null when none, or when this Axon version does not let it be read
     */
    static Snapshotter snapshotterOf(AbstractSnapshotTrigger trigger) {
        if (TRIGGER_SNAPSHOTTER == null) {
            return null;
        }
        try {
            return (Snapshotter) TRIGGER_SNAPSHOTTER.get(trigger);
        } catch (IllegalAccessException | RuntimeException e) {
            logger.warn("Cannot read the snapshotter of snapshot trigger [{}]", trigger, e);
            return null;
        }
    }

    /** @return whether the snapshotter of Axon's snapshot triggers can be read */
    static boolean triggerSnapshotterAvailable() {
        return TRIGGER_SNAPSHOTTER != null;
    }

    /**
     * @param aggregate an aggregate's configurer
     * @param setting   one of its settings
     * @return the setting's {@code Component} (call {@code get()} for its value), or null when it cannot be read
     * @throws IllegalAccessException never, once {@link #available(AggregateSetting)} is true
     */
    static Component<?> component(AggregateConfigurer<?> aggregate, AggregateSetting setting)
            throws IllegalAccessException {
        Field field = AGGREGATE_SETTINGS[setting.ordinal()];
        return field == null ? null : (Component<?>) field.get(aggregate);
    }

    /**
     * @return whether this Axon version lets the setting be read
     */
    static boolean available(AggregateSetting setting) {
        return AGGREGATE_SETTINGS[setting.ordinal()] != null;
    }

    /**
     * @param component a configuration component
     * @return the function it builds its value with; null when it cannot be read
     */
    static Function<?, ?> builderOf(Component<?> component) throws IllegalAccessException {
        return component == null || COMPONENT_BUILDER == null ? null : (Function<?, ?>) COMPONENT_BUILDER.get(component);
    }

    /** @return whether components' builder functions can be read */
    static boolean componentBuildersAvailable() {
        return COMPONENT_BUILDER != null;
    }

    /**
     * Ends the time limit Axon's {@code UnitOfWorkTimeoutInterceptor} started for the command of this Unit of Work
     * (access 7), if any: the handler thread is done with the command. Does nothing where Axon has no Unit of Work
     * timeouts or none was started; a failure to end it is logged, never thrown. Handler thread.
     *
     * @param unitOfWork the command's Unit of Work
     */
    static void endTimeLimit(UnitOfWork<?> unitOfWork) {
        if (TIME_LIMIT_KEY == null) {
            return;
        }
        Object limit = unitOfWork.root().resources().get(TIME_LIMIT_KEY);
        if (limit != null) {
            try {
                COMPLETE_TIME_LIMIT.invoke(limit);
            } catch (ReflectiveOperationException | RuntimeException e) {
                logger.warn("Could not end Axon's time limit of a command's Unit of Work", e);
            }
        }
    }

    /** @return true where this Axon has Unit of Work timeouts and ringbus can end their limits (access 7) */
    static boolean endsTimeLimits() {
        return TIME_LIMIT_KEY != null;
    }

    private interface Lookup {
        AccessibleObject find() throws ReflectiveOperationException;
    }

    private static AccessibleObject access(List<String> unavailable, String name, String consequence, Lookup lookup) {
        try {
            AccessibleObject found = lookup.find();
            found.setAccessible(true);
            return found;
        } catch (ReflectiveOperationException | RuntimeException e) {
            unavailable.add(name);
            logger.warn("Cannot use {} of this Axon version ({}): {}", name, e, consequence);
            return null;
        }
    }

    private static boolean classExists(String name) {
        try {
            Class.forName(name, false, AggregateAnnotationCommandHandler.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }
}
