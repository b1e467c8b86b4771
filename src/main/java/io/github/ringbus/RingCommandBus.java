package io.github.ringbus;

import org.axonframework.tracing.Span;
import org.axonframework.tracing.SpanScope;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.axonframework.commandhandling.callbacks.NoOpCallback;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.common.Registration;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.Snapshotter;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.lifecycle.Lifecycle;
import org.axonframework.messaging.Distributed;
import org.axonframework.lifecycle.Phase;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.messaging.unitofwork.RollbackConfigurationType;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.RepositoryProvider;
import org.axonframework.modelling.command.inspection.AggregateMetaModelFactory;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitorCallback;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.BlockingWaitStrategy;
import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.SleepingWaitStrategy;
import com.lmax.disruptor.WaitStrategy;
import com.lmax.disruptor.YieldingWaitStrategy;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * An Axon {@link CommandBus} that runs every command through the stages of one LMAX Disruptor ring:
 * <pre>
 *   preload -&gt; handle -&gt; (store || publish) -&gt; complete
 * </pre>
 * The preload stage puts the command's target aggregate in memory, a handler thread runs the command handler, the
 * store stage appends the events of many commands per call, the publish stage hands them to subscribing event
 * processors, and the complete stage commits the Unit of Work and calls the caller's callback.
 * <p>
 * <b>Guarantees.</b> Commands for one aggregate are handled in the order they were dispatched, also after one of them
 * fails. A command that fails before its events are appended (in its handler, a prepare-commit handler, or the append
 * itself) has none of its events stored or published, and the next command sees the aggregate as the successful
 * commands before it left it. Two failures come after the append and are reported without undoing it: a subscriber
 * that throws while the events are published, and a commit handler that throws. Once {@code dispatch} returns
 * normally, the callback is called exactly once, on the complete stage's thread, after the command's events are
 * stored (and published); every failure is reported through it: no handler, no target, unknown aggregate, full
 * ring, dispatch before start or after shutdown. {@code dispatch} itself throws only for a null argument or a
 * failing dispatch interceptor, as Axon's own buses do; the callback is then not called.
 * <p>
 * <b>Threads.</b> {@code dispatch} may be called from any number of threads at once. The bus starts its threads in
 * {@link #start()} (called by Axon's lifecycle when registered in a {@link Configuration}), and {@link #shutdown()}
 * refuses new commands, then drains every command in flight.
 * <p>
 * Build one with {@link #builder()}; aggregates configured with Axon's {@code configureAggregate} are routed through
 * the ring automatically (see {@link io.github.ringbus.RingbusConfigurerModule}), or register them directly
 * with {@link #registerAggregate(Class)}.
 */
public final class RingCommandBus implements CommandBus, Lifecycle {

    private static final Logger logger = LoggerFactory.getLogger(RingCommandBus.class);

    private enum State { NEW, RUNNING, STOPPING, STOPPED }

    // Copied from the builder: a setter called on the builder after build() must not change a running bus.
    private final EventStore eventStore;
    private final FullRingPolicy fullRingPolicy;
    private final Duration fullRingTimeout;
    private final Duration shutdownTimeout;
    private final MessageMonitor<? super CommandMessage<?>> messageMonitor;
    private final CommandTargetResolver commandTargetResolver;
    private final int cacheSize;
    private final int handlerThreads;
    private final CommandRoutes routes = new CommandRoutes();
    private final List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors;
    private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors;
    private final Pipeline pipeline;
    /** Commands dispatched from the pipeline's own threads: run in place, or refused when waited for. */
    private final NestedDispatch nested;
    /** The bus's snapshot trigger, its snapshots taken on {@link #snapshots}; for aggregates without their own. */
    private final SnapshotTriggerDefinition snapshotTriggerDefinition;
    /** Where every snapshot of this bus's aggregates is taken; its thread starts with the first; closed at shutdown. */
    private final SnapshotThread snapshots;
    /** Null unless tracing was configured: without it dispatch allocates nothing for spans. */
    private final CommandBusSpanFactory spanFactory;
    /** Dispatchers between their state check and their publish; shutdown closes it and waits for it to empty. */
    private final DispatchGate gate = new DispatchGate();
    private final Object lifecycleLock = new Object();
    private volatile State state = State.NEW;
    /** Set by shutdown once no slot can be freed any more: dispatchers waiting for one give up. */
    private volatile boolean slotsExhausted;
    /** Fire-and-forget commands refused (their callback tells no one): logged, at most once a second. */
    private final RefusalLog refusedFireAndForget = new RefusalLog();

    private RingCommandBus(Builder builder) {
        this.eventStore = builder.eventStore;
        this.fullRingPolicy = builder.fullRingPolicy;
        this.fullRingTimeout = builder.fullRingTimeout;
        this.shutdownTimeout = builder.shutdownTimeout;
        this.messageMonitor = builder.messageMonitor;
        this.commandTargetResolver = builder.commandTargetResolver;
        this.cacheSize = builder.cacheSize;
        this.handlerThreads = builder.handlerThreads;
        this.dispatchInterceptors = new CopyOnWriteArrayList<>(builder.dispatchInterceptors);
        this.handlerInterceptors = new CopyOnWriteArrayList<>(builder.handlerInterceptors);
        this.pipeline = new Pipeline(new Pipeline.Settings(
                builder.ringSize, builder.handlerThreads, builder.waitStrategy(), builder.publishMode,
                builder.eventStore, builder.transactionManager, builder.rollbackConfiguration,
                builder.maxStoreBatchEvents, handlerInterceptors,
                builder.threadNamePrefix, builder.pipelineMonitor, builder.tracingSpanFactory()), routes);
        this.spanFactory = builder.tracingSpanFactory();
        this.nested = new NestedDispatch(routes, this::intercept, handlerInterceptors, messageMonitor,
                                         builder.rollbackConfiguration);
        this.snapshots = new SnapshotThread(builder.threadNamePrefix + "-snapshot");
        this.snapshotTriggerDefinition = snapshots.offPipeline(
                builder.snapshotter != null
                        ? new EventCountSnapshotTriggerDefinition(builder.snapshotter, builder.snapshotThreshold)
                        : builder.snapshotTriggerDefinition);
    }

    /**
     * @return a builder with defaults suited to the machine it runs on; only the event store is required
     */
    public static Builder builder() {
        return new Builder();
    }

    // --- dispatch --------------------------------------------------------------------------------------------------

    @Override
    public <C> void dispatch(CommandMessage<C> command) {
        // As SimpleCommandBus's default callback: failures logged at WARN, successes at INFO.
        dispatch(command, LoggingCallback.INSTANCE);
    }

    @Override
    @SuppressWarnings("unchecked")
    public <C, R> void dispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        Objects.requireNonNull(command, "RingCommandBus.dispatch: the command must not be null");
        Objects.requireNonNull(callback, "RingCommandBus.dispatch: the callback must not be null");
        if (spanFactory == null) {
            doDispatch(command, callback);
            return;
        }
        Span span = spanFactory.createDispatchCommandSpan(command, false).start();
        try (SpanScope ignored = span.makeCurrent()) {
            doDispatch(spanFactory.propagateContext(command), callback);
        } catch (RuntimeException | Error e) {
            span.recordException(e);
            throw e;
        } finally {
            try {
                span.end();
            } catch (RuntimeException | Error tracingFailure) {
                // The command was dispatched (or refused through its callback): tracing does not undo that.
                logger.warn("Tracing failed to end the dispatch span of command [{}]", command.getCommandName(),
                            tracingFailure);
            }
        }
    }

    @SuppressWarnings("unchecked")
    private <C, R> void doDispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        if (Pipeline.isPipelineThread()
                && nested.dispatchedHere(command, (CommandCallback<Object, Object>) callback)) {
            return; // run in place, or refused because waiting for it would hang the pipeline
        }
        if (!gate.enter()) {
            refuse(command, callback, state);
            return;
        }
        try {
            CommandMessage<?> intercepted = intercept(command);
            // Before a slot is claimed: a monitor that throws here fails this dispatch alone (as on Axon's buses),
            // and between claiming and publishing a slot nothing of the user's runs, so no sequence stays claimed.
            MessageMonitor.MonitorCallback monitorCallback = messageMonitor.onMessageIngested(intercepted);
            if (routes.handlerFor(intercepted.getCommandName()) == null) {
                // As Axon's AsynchronousCommandBus: refused on the dispatching thread, without entering the ring.
                fail(intercepted, callback, monitorCallback, CommandRoutes.noHandlerFor(intercepted.getCommandName()));
                return;
            }
            long sequence = claim(intercepted, callback, monitorCallback);
            if (sequence < 0) {
                return;
            }
            pipeline.publish(sequence, intercepted, (CommandCallback<Object, Object>) callback, monitorCallback);
        } finally {
            gate.exit();
        }
    }

    @SuppressWarnings("unchecked")
    private CommandMessage<?> intercept(CommandMessage<?> command) {
        CommandMessage<?> intercepted = command;
        for (MessageDispatchInterceptor<? super CommandMessage<?>> interceptor : dispatchInterceptors) {
            intercepted = (CommandMessage<?>) interceptor.handle(intercepted);
        }
        return intercepted;
    }

    private long claim(CommandMessage<?> command, CommandCallback<?, ?> callback,
                       MessageMonitor.MonitorCallback monitorCallback) {
        if (Pipeline.isPipelineThread()) {
            // Waiting for a slot on a pipeline thread would wait for this very thread: never wait here.
            return claimOrFail(command, callback, monitorCallback, "it was dispatched from ringbus pipeline thread ["
                    + Thread.currentThread().getName() + "], which cannot wait for a slot it must free itself");
        }
        switch (fullRingPolicy) {
            case FAIL_FAST:
                return claimOrFail(command, callback, monitorCallback, "the full-ring policy is FAIL_FAST");
            case BLOCK_WITH_TIMEOUT:
                return claimWithin(command, callback, monitorCallback);
            default:
                return claimUntilShutdown(command, callback, monitorCallback);
        }
    }

    private long claimOrFail(CommandMessage<?> command, CommandCallback<?, ?> callback,
                             MessageMonitor.MonitorCallback monitorCallback, String why) {
        long sequence = pipeline.tryClaim();
        if (sequence < 0) {
            fail(command, callback, monitorCallback, new RingFullException(
                    "Command [" + command.getCommandName() + "] was not accepted: all " + pipeline.ringSize()
                            + " slots of the ring are taken and " + why));
        }
        return sequence;
    }

    private long claimWithin(CommandMessage<?> command, CommandCallback<?, ?> callback,
                             MessageMonitor.MonitorCallback monitorCallback) {
        long deadline = System.nanoTime() + fullRingTimeout.toNanos();
        long sequence;
        while ((sequence = pipeline.tryClaim()) < 0) {
            if (System.nanoTime() - deadline >= 0 || slotsExhausted) {
                fail(command, callback, monitorCallback, new RingFullException(
                        "Command [" + command.getCommandName() + "] was not accepted: all " + pipeline.ringSize()
                                + " slots of the ring stayed taken for " + fullRingTimeout.toMillis()
                                + " ms"));
                return -1;
            }
            LockSupport.parkNanos(50_000);
        }
        return sequence;
    }

    /**
     * {@link FullRingPolicy#BLOCK}: waits for a slot as long as the ring can still free one, so that a shutdown whose
     * ring cannot drain in time does not leave this dispatcher parked for ever.
     */
    private long claimUntilShutdown(CommandMessage<?> command, CommandCallback<?, ?> callback,
                                    MessageMonitor.MonitorCallback monitorCallback) {
        long sequence;
        while ((sequence = pipeline.tryClaim()) < 0) {
            if (slotsExhausted) {
                fail(command, callback, monitorCallback, new ShutdownInProgressException(
                        "RingCommandBus shut down while command [" + command.getCommandName()
                                + "] waited for a free slot; it was not handled"));
                return -1;
            }
            LockSupport.parkNanos(1_000);
        }
        return sequence;
    }

    /**
     * Puts a message for an aggregate that is no command (a deadline, see {@link RingRepository#send}) in the ring:
     * as a dispatch, but without the dispatch interceptors, the message monitor and a dispatch span.
     */
    private void deliver(CommandMessage<?> delivery, CommandCallback<Object, Object> callback) {
        if (!gate.enter()) {
            refuse(delivery, callback, state, NoOpMessageMonitorCallback.INSTANCE);
            return;
        }
        try {
            long sequence = claim(delivery, callback, NoOpMessageMonitorCallback.INSTANCE);
            if (sequence >= 0) {
                pipeline.publish(sequence, delivery, callback, NoOpMessageMonitorCallback.INSTANCE);
            }
        } finally {
            gate.exit();
        }
    }

    /** A dispatch before start or after shutdown: reported to the message monitor and the callback. */
    private void refuse(CommandMessage<?> command, CommandCallback<?, ?> callback, State current) {
        refuse(command, callback, current, messageMonitor.onMessageIngested(command));
    }

    private void refuse(CommandMessage<?> command, CommandCallback<?, ?> callback, State current,
                        MessageMonitor.MonitorCallback monitorCallback) {
        RuntimeException refusal = current == State.NEW
                ? new IllegalStateException("RingCommandBus has not been started; command ["
                                                    + command.getCommandName() + "] was not handled")
                : new ShutdownInProgressException("RingCommandBus is shut down; command ["
                                                          + command.getCommandName() + "] was not handled");
        if (callback == LoggingCallback.INSTANCE || callback == NoOpCallback.INSTANCE) {
            // Fire-and-forget: nobody hears of the refusal but the monitor and this log, which says it once a
            // second (a burst after shutdown would otherwise log a line per command).
            refusedFireAndForget.record(refusal);
            fail(command, NoOpCallback.INSTANCE, monitorCallback, refusal);
            return;
        }
        fail(command, callback, monitorCallback, refusal);
    }

    /**
     * Reports a command that never entered the ring: to the message monitor (whose failure is logged, so that the
     * callback is still called), then to the callback, on the dispatching thread.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    private static void fail(CommandMessage<?> command, CommandCallback callback,
                             MessageMonitor.MonitorCallback monitorCallback, Throwable failure) {
        try {
            monitorCallback.reportFailure(failure);
        } catch (RuntimeException | Error monitorFailure) {
            logger.warn("The message monitor failed to record the refusal of command [{}]",
                        command.getCommandName(), monitorFailure);
        }
        callback.onResult(command, asCommandResultMessage(failure));
    }

    // --- handlers, aggregates, interceptors ------------------------------------------------------------------------

    @Override
    public Registration subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        return routes.subscribe(commandName, handler);
    }

    @Override
    public Registration registerDispatchInterceptor(
            MessageDispatchInterceptor<? super CommandMessage<?>> dispatchInterceptor) {
        dispatchInterceptors.add(dispatchInterceptor);
        return () -> dispatchInterceptors.remove(dispatchInterceptor);
    }

    @Override
    public Registration registerHandlerInterceptor(
            MessageHandlerInterceptor<? super CommandMessage<?>> handlerInterceptor) {
        handlerInterceptors.add(handlerInterceptor);
        return () -> handlerInterceptors.remove(handlerInterceptor);
    }

    /**
     * Creates the repository of an event-sourced aggregate type whose commands this bus runs, and routes those
     * commands through the ring. Axon's {@code AggregateAnnotationCommandHandler} must be built on this repository
     * and subscribed to this bus; {@link #registerAggregate(Class)} does both.
     *
     * @param model              the aggregate's model
     * @param aggregateFactory   creates empty aggregate roots to replay events on
     * @param repositoryProvider gives aggregates access to other repositories (may be null)
     * @param targetResolver     the resolver the aggregate's command handler uses, so that the preload stage finds
     *                           the same target
     * @param <A>                the aggregate type
     * @return the repository
     */
    <A> RingRepository<A> createRepository(AggregateModel<A> model,
                                                  AggregateFactory<A> aggregateFactory,
                                                  RepositoryProvider repositoryProvider,
                                                  CommandTargetResolver targetResolver) {
        return createRepository(model, aggregateFactory, repositoryProvider, targetResolver,
                                NoSnapshotTriggerDefinition.INSTANCE);
    }

    /**
     * As {@link #createRepository(AggregateModel, AggregateFactory, RepositoryProvider, CommandTargetResolver)},
     * for an aggregate that configures when it is snapshotted.
     *
     * @param snapshotTrigger the aggregate's own snapshot trigger definition; {@link NoSnapshotTriggerDefinition}
     *                        for the bus's (see {@link Builder#snapshotTriggerDefinition}). Its snapshots are taken
     *                        on the bus's snapshot thread.
     */
    <A> RingRepository<A> createRepository(AggregateModel<A> model,
                                                  AggregateFactory<A> aggregateFactory,
                                                  RepositoryProvider repositoryProvider,
                                                  CommandTargetResolver targetResolver,
                                                  SnapshotTriggerDefinition snapshotTrigger) {
        SnapshotTriggerDefinition trigger = snapshotTrigger == null
                                            || snapshotTrigger instanceof NoSnapshotTriggerDefinition
                ? snapshotTriggerDefinition
                : snapshots.offPipeline(snapshotTrigger);
        RingRepository<A> repository = new RingRepository<>(
                model, aggregateFactory, eventStore, repositoryProvider, trigger,
                cacheSize, pipeline::completedSequence, targetResolver);
        repository.deliverThrough(this::deliver);
        routes.register(repository);
        return repository;
    }

    /**
     * Creates the repository of an aggregate type from an Axon configuration: its aggregate model (through the
     * configured {@link AggregateMetaModelFactory}, parameter resolvers and handler definitions) and the given
     * factory.
     */
    <A> RingRepository<A> createRepository(Class<A> aggregateType,
                                                  AggregateFactory<A> aggregateFactory,
                                                  Configuration configuration) {
        return createRepository(aggregateType, aggregateFactory, configuration, NoSnapshotTriggerDefinition.INSTANCE);
    }

    /**
     * As {@link #createRepository(Class, AggregateFactory, Configuration)}, for an aggregate that configures when
     * it is snapshotted ({@code AggregateConfigurer.configureSnapshotTrigger}, Spring's
     * {@code @Aggregate(snapshotTriggerDefinition = ...)}).
     *
     * @param snapshotTrigger the aggregate's own snapshot trigger definition, or {@link NoSnapshotTriggerDefinition}
     *                        for the bus's; its snapshots are taken on the bus's snapshot thread
     */
    <A> RingRepository<A> createRepository(Class<A> aggregateType,
                                                  AggregateFactory<A> aggregateFactory,
                                                  Configuration configuration,
                                                  SnapshotTriggerDefinition snapshotTrigger) {
        return createRepository(aggregateType, aggregateFactory, configuration, snapshotTrigger, null);
    }

    /**
     * As {@link #createRepository(Class, AggregateFactory, Configuration, SnapshotTriggerDefinition)}, for an
     * aggregate with a command target resolver of its own ({@code AggregateConfigurer.configureCommandTargetResolver},
     * Spring's {@code @Aggregate(commandTargetResolver = ...)}).
     *
     * @param targetResolver the resolver the aggregate's command handler uses, so that the preload stage finds the
     *                       same target; null for the configuration's (or the bus's)
     */
    <A> RingRepository<A> createRepository(Class<A> aggregateType,
                                                  AggregateFactory<A> aggregateFactory,
                                                  Configuration configuration,
                                                  SnapshotTriggerDefinition snapshotTrigger,
                                                  CommandTargetResolver targetResolver) {
        AggregateModel<A> model = configuration.getComponent(
                AggregateMetaModelFactory.class,
                () -> new AnnotatedAggregateMetaModelFactory(configuration.parameterResolverFactory(),
                                                             configuration.handlerDefinition(aggregateType))
        ).createModel(aggregateType);
        CommandTargetResolver resolver = targetResolver != null
                ? targetResolver
                : configuration.getComponent(CommandTargetResolver.class, () -> commandTargetResolver);
        return createRepository(model, aggregateFactory, configuration::repository, resolver, snapshotTrigger);
    }

    /**
     * Routes the commands of an aggregate type that keeps a repository of its own by aggregate: a state-stored
     * aggregate (a JPA entity with Axon's {@code GenericJpaRepository}, whose {@code LockingRepository} locks each
     * aggregate it loads), or any aggregate whose repository is not a {@link RingRepository}. Its command handler
     * (Axon's {@code AggregateAnnotationCommandHandler} on its own repository) is subscribed to this bus as usual.
     * {@code RingbusConfigurerModule} and the Spring Boot support call this for JPA-mapped aggregates (and Spring's
     * {@code @Aggregate(repository = ...)}).
     * <p>
     * Each of its commands goes to the handler thread that owns its target identifier, so one aggregate's commands
     * run one at a time in dispatch order, and runs there whole, as on Axon's {@code SimpleCommandBus}: in a Unit of
     * Work of its own with a transaction of this bus's {@code TransactionManager}, the repository loads the aggregate
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
     * Routes an annotated event-sourced aggregate's commands through this bus without an Axon configuration:
     * creates its repository and subscribes Axon's {@code AggregateAnnotationCommandHandler} for it.
     *
     * @param aggregateType the aggregate type, with {@code @CommandHandler}s and {@code @EventSourcingHandler}s
     * @param <A>           the aggregate type
     * @return the repository
     */
    public <A> Repository<A> registerAggregate(Class<A> aggregateType) {
        AggregateModel<A> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(aggregateType);
        RingRepository<A> repository = createRepository(model, new GenericAggregateFactory<>(model),
                                                        routes.repositories(), commandTargetResolver);
        AggregateAnnotationCommandHandler.<A>builder()
                                         .aggregateType(aggregateType)
                                         .aggregateModel(model)
                                         .repository(repository)
                                         .commandTargetResolver(commandTargetResolver)
                                         .build()
                                         .subscribe(this);
        return repository;
    }

    // --- lifecycle -------------------------------------------------------------------------------------------------

    @Override
    public void registerLifecycleHandlers(LifecycleRegistry lifecycle) {
        lifecycle.onStart(Phase.LOCAL_MESSAGE_HANDLER_REGISTRATIONS - 1, this::start);
        // Drain before event processors stop (they shut down at INBOUND_EVENT_CONNECTORS), so the events of commands
        // in flight still reach them.
        lifecycle.onShutdown(Phase.INBOUND_EVENT_CONNECTORS + 1, this::shutdown);
    }

    /**
     * Starts the stage threads; commands are accepted from now on.
     *
     * @throws IllegalStateException when the bus was shut down (a bus cannot be restarted)
     */
    public void start() {
        synchronized (lifecycleLock) {
            if (state == State.RUNNING) {
                return;
            }
            if (state != State.NEW) {
                throw new IllegalStateException("RingCommandBus was shut down and cannot be restarted");
            }
            pipeline.start();
            gate.open();
            state = State.RUNNING;
        }
    }

    /**
     * Refuses new commands (their callbacks receive a {@link ShutdownInProgressException}), waits for dispatches
     * under way to publish, and drains the ring: every command in flight completes and its callback fires. Commands
     * still in flight after the shutdown timeout are completed with a {@link ShutdownInProgressException}. Calling it
     * again has no effect.
     *
     * @throws IllegalStateException when called from a pipeline thread (e.g. a callback), which would wait for itself
     */
    public void shutdown() {
        if (Pipeline.isPipelineThread()) {
            throw new IllegalStateException("RingCommandBus cannot be shut down from its own pipeline thread ["
                                                    + Thread.currentThread().getName() + "]");
        }
        synchronized (lifecycleLock) {
            if (state == State.STOPPED) {
                return;
            }
            boolean started = state == State.RUNNING;
            state = State.STOPPING;
            gate.close();
            if (started) {
                drain();
            }
            snapshots.close();
            state = State.STOPPED;
        }
    }

    /**
     * Waits for the dispatches under way to publish (or give up), then for the ring to drain, all within the
     * shutdown timeout; then completes whatever is left so that every callback fires exactly once.
     */
    private void drain() {
        long deadline = System.nanoTime() + shutdownTimeout.toNanos();
        awaitDispatchers(deadline);
        try {
            pipeline.drainAndStop(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        // The stage threads have ended: no slot will be freed. Dispatchers still waiting for one give up now.
        slotsExhausted = true;
        while (!gate.isEmpty()) {
            LockSupport.parkNanos(100_000);
        }
        pipeline.completeUnfinished();
    }

    private void awaitDispatchers(long deadline) {
        while (!gate.isEmpty() && System.nanoTime() - deadline < 0) {
            LockSupport.parkNanos(100_000);
        }
    }

    /**
     * @return true between {@link #start()} and {@link #shutdown()}
     */
    public boolean isRunning() {
        return state == State.RUNNING;
    }

    /**
     * @return how many slots of the ring are free now
     */
    public long remainingCapacity() {
        return pipeline.remainingCapacity();
    }

    /**
     * @return the number of slots in the ring
     */
    public int ringSize() {
        return pipeline.ringSize();
    }

    /**
     * @return the number of handler threads
     */
    public int handlerThreads() {
        return handlerThreads;
    }

    /**
     * Unwraps the ringbus bus from a command bus that is one or that delegates to one locally.
     *
     * @param commandBus an Axon command bus
     * @return the ringbus bus, or null
     */
    public static RingCommandBus localRingOf(CommandBus commandBus) {
        if (commandBus instanceof RingCommandBus) {
            return (RingCommandBus) commandBus;
        }
        if (commandBus instanceof Distributed) {
            Object local = ((Distributed<?>) commandBus).localSegment();
            return local instanceof RingCommandBus ? (RingCommandBus) local : null;
        }
        return null;
    }

    /**
     * The settings of a {@link RingCommandBus}. Every setter checks its value at once and throws an
     * {@link AxonConfigurationException} naming the setting; {@link #build()} checks that the event store was given.
     * Defaults: see each setter.
     */
    public static final class Builder {

        private EventStore eventStore;
        private int ringSize = 4096;
        private int handlerThreads = defaultHandlerThreads();
        private WaitStrategyChoice waitStrategy = WaitStrategyChoice.SLEEPING;
        private FullRingPolicy fullRingPolicy = FullRingPolicy.BLOCK;
        private Duration fullRingTimeout = Duration.ofSeconds(1);
        private PublishMode publishMode = PublishMode.IN_TRANSACTION;
        private int cacheSize = 100_000;
        private int maxStoreBatchEvents = 1024;
        private CommandTargetResolver commandTargetResolver = new AnnotatedTargetResolver();
        private TransactionManager transactionManager = NoTransactionManager.INSTANCE;
        private RollbackConfiguration rollbackConfiguration = RollbackConfigurationType.UNCHECKED_EXCEPTIONS;
        private MessageMonitor<? super CommandMessage<?>> messageMonitor = NoOpMessageMonitor.INSTANCE;
        private SnapshotTriggerDefinition snapshotTriggerDefinition = NoSnapshotTriggerDefinition.INSTANCE;
        private Snapshotter snapshotter;
        private int snapshotThreshold;
        private final List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors =
                new CopyOnWriteArrayList<>();
        private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors =
                new CopyOnWriteArrayList<>();
        private String threadNamePrefix = "ringbus";
        private Duration shutdownTimeout = Duration.ofSeconds(30);
        private PipelineMonitor pipelineMonitor = PipelineMonitor.NONE;
        private CommandBusSpanFactory spanFactory;

        private Builder() {
        }

        /** One handler thread per four cores, at least one: the other stages need cores too. */
        static int defaultHandlerThreads() {
            return Math.max(1, Runtime.getRuntime().availableProcessors() / 4);
        }

        /**
         * The event store aggregates are loaded from and events appended to. Required. A
         * {@link io.github.ringbus.RingEventStore} lets store and publish run as separate stages.
         */
        public Builder eventStore(EventStore eventStore) {
            this.eventStore = require(eventStore, "eventStore");
            return this;
        }

        /** The number of slots: a power of two, at least 2. Default 4096. */
        public Builder ringSize(int ringSize) {
            check(ringSize >= 2 && Integer.bitCount(ringSize) == 1,
                  "ringSize must be a power of two of at least 2, but was " + ringSize);
            this.ringSize = ringSize;
            return this;
        }

        /** Handler threads, each owning a disjoint set of aggregates. Default: cores / 4, at least 1. */
        public Builder handlerThreads(int handlerThreads) {
            check(handlerThreads >= 1 && handlerThreads <= 256,
                  "handlerThreads must be between 1 and 256, but was " + handlerThreads);
            this.handlerThreads = handlerThreads;
            return this;
        }

        /** How stage threads wait for work. Default {@link WaitStrategyChoice#SLEEPING}. */
        public Builder waitStrategy(WaitStrategyChoice waitStrategy) {
            this.waitStrategy = require(waitStrategy, "waitStrategy");
            return this;
        }

        /** What a dispatch does when the ring is full. Default {@link FullRingPolicy#BLOCK}. */
        public Builder fullRingPolicy(FullRingPolicy fullRingPolicy) {
            this.fullRingPolicy = require(fullRingPolicy, "fullRingPolicy");
            return this;
        }

        /** How long {@link FullRingPolicy#BLOCK_WITH_TIMEOUT} waits for a slot. Positive; default 1 s. */
        public Builder fullRingTimeout(Duration fullRingTimeout) {
            require(fullRingTimeout, "fullRingTimeout");
            check(!fullRingTimeout.isNegative() && !fullRingTimeout.isZero(),
                  "fullRingTimeout must be positive, but was " + fullRingTimeout);
            this.fullRingTimeout = fullRingTimeout;
            return this;
        }

        /** When events reach subscribers relative to the store. Default {@link PublishMode#IN_TRANSACTION}. */
        public Builder publishMode(PublishMode publishMode) {
            this.publishMode = require(publishMode, "publishMode");
            return this;
        }

        /** The most aggregates of each type kept in memory. Positive; default 100,000. */
        public Builder cacheSize(int cacheSize) {
            check(cacheSize >= 1, "cacheSize must be positive, but was " + cacheSize);
            this.cacheSize = cacheSize;
            return this;
        }

        /** The most events appended in one store call and transaction. Positive; default 1024. */
        public Builder maxStoreBatchEvents(int maxStoreBatchEvents) {
            check(maxStoreBatchEvents >= 1, "maxStoreBatchEvents must be positive, but was " + maxStoreBatchEvents);
            this.maxStoreBatchEvents = maxStoreBatchEvents;
            return this;
        }

        /**
         * Finds a command's target aggregate. Default: {@code @TargetAggregateIdentifier} annotations, read with
         * {@link AnnotatedTargetResolver}.
         */
        public Builder commandTargetResolver(CommandTargetResolver commandTargetResolver) {
            this.commandTargetResolver = require(commandTargetResolver, "commandTargetResolver");
            return this;
        }

        /** The transaction each store batch is appended in. Default: none. */
        public Builder transactionManager(TransactionManager transactionManager) {
            this.transactionManager = require(transactionManager, "transactionManager");
            return this;
        }

        /** Which handler exceptions discard the command's events. Default: unchecked exceptions. */
        public Builder rollbackConfiguration(RollbackConfiguration rollbackConfiguration) {
            this.rollbackConfiguration = require(rollbackConfiguration, "rollbackConfiguration");
            return this;
        }

        /** Monitors every dispatched command. Default: none. */
        public Builder messageMonitor(MessageMonitor<? super CommandMessage<?>> messageMonitor) {
            this.messageMonitor = require(messageMonitor, "messageMonitor");
            return this;
        }

        /**
         * When to snapshot the aggregates that do not configure a trigger of their own. Default: never. The triggers
         * of Axon's definitions (any {@code AbstractSnapshotTrigger}) are re-pointed so that their snapshotter takes
         * each snapshot on the bus's snapshot thread, after the triggering command's events were stored, never on a
         * pipeline thread. Replaces {@link #snapshotter(Snapshotter, int)}.
         */
        public Builder snapshotTriggerDefinition(SnapshotTriggerDefinition snapshotTriggerDefinition) {
            this.snapshotTriggerDefinition = require(snapshotTriggerDefinition, "snapshotTriggerDefinition");
            this.snapshotter = null;
            return this;
        }

        /**
         * Snapshots an aggregate every {@code eventThreshold} events (Axon's event-count trigger), with the given
         * snapshotter (e.g. Axon's {@code AggregateSnapshotter}) running on the bus's snapshot thread, never on a
         * pipeline thread. Applies to the aggregates that do not configure a trigger of their own. Replaces
         * {@link #snapshotTriggerDefinition}.
         */
        public Builder snapshotter(Snapshotter snapshotter, int eventThreshold) {
            require(snapshotter, "snapshotter");
            check(eventThreshold >= 1, "snapshot eventThreshold must be positive, but was " + eventThreshold);
            this.snapshotter = snapshotter;
            this.snapshotThreshold = eventThreshold;
            return this;
        }

        /** Adds a dispatch interceptor, applied on the dispatching thread. */
        public Builder dispatchInterceptor(MessageDispatchInterceptor<? super CommandMessage<?>> interceptor) {
            dispatchInterceptors.add(require(interceptor, "dispatchInterceptor"));
            return this;
        }

        /** Adds a handler interceptor, applied on the handler thread inside the command's Unit of Work. */
        public Builder handlerInterceptor(MessageHandlerInterceptor<? super CommandMessage<?>> interceptor) {
            handlerInterceptors.add(require(interceptor, "handlerInterceptor"));
            return this;
        }

        /** The prefix of the stage threads' names. Default "ringbus". */
        public Builder threadNamePrefix(String threadNamePrefix) {
            require(threadNamePrefix, "threadNamePrefix");
            check(!threadNamePrefix.isBlank(), "threadNamePrefix must not be blank");
            this.threadNamePrefix = threadNamePrefix;
            return this;
        }

        /** How long shutdown waits for commands in flight. Positive; default 30 s. */
        public Builder shutdownTimeout(Duration shutdownTimeout) {
            require(shutdownTimeout, "shutdownTimeout");
            check(!shutdownTimeout.isNegative() && !shutdownTimeout.isZero(),
                  "shutdownTimeout must be positive, but was " + shutdownTimeout);
            this.shutdownTimeout = shutdownTimeout;
            return this;
        }

        /** Observes completed commands and store batches, for metrics. Default: none. */
        public Builder pipelineMonitor(PipelineMonitor pipelineMonitor) {
            this.pipelineMonitor = require(pipelineMonitor, "pipelineMonitor");
            return this;
        }

        /**
         * Traces dispatch (on the caller's thread) and handling (on the handler thread) with Axon's spans, the
         * handle span a child of the dispatch span. Default: no tracing, and no cost for it.
         */
        public Builder spanFactory(CommandBusSpanFactory spanFactory) {
            this.spanFactory = require(spanFactory, "spanFactory");
            return this;
        }

        CommandBusSpanFactory tracingSpanFactory() {
            return spanFactory;
        }

        /**
         * @return a bus with these settings, not yet started
         * @throws AxonConfigurationException when no event store was given
         */
        public RingCommandBus build() {
            check(eventStore != null, "eventStore is required: call eventStore(...) on RingCommandBus.builder()");
            return new RingCommandBus(this);
        }

        WaitStrategy waitStrategy() {
            switch (waitStrategy) {
                case BLOCKING:
                    return new BlockingWaitStrategy();
                case YIELDING:
                    return new YieldingWaitStrategy();
                case BUSY_SPIN:
                    return new BusySpinWaitStrategy();
                default:
                    return new SleepingWaitStrategy();
            }
        }

        private static <T> T require(T value, String setting) {
            check(value != null, setting + " must not be null");
            return value;
        }

        private static void check(boolean condition, String message) {
            if (!condition) {
                throw new AxonConfigurationException("RingCommandBus: " + message);
            }
        }
    }
}
