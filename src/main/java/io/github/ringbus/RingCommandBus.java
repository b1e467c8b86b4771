package io.github.ringbus;

import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.axonframework.messaging.annotation.HandlerDefinition;
import org.axonframework.messaging.annotation.ParameterResolverFactory;
import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.tracing.NoOpSpanFactory;
import org.axonframework.tracing.SpanFactory;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.DefaultCommandBusSpanFactory;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.common.Registration;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
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
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.messaging.unitofwork.RollbackConfigurationType;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.Repository;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitor;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * An Axon {@link CommandBus} that runs every command through the stages of one LMAX Disruptor ring:
 * <pre>
 *   preload -&gt; handle -&gt; (store || publish) -&gt; complete
 * </pre>
 * The preload stage puts the command's target aggregate in memory, a handler thread runs the command handler, the
 * store stage appends the events of many commands per call, the publish stage hands them to subscribing event
 * processors, and the complete stage commits the Unit of Work and calls the caller's callback.
 * <p>
 * <b>Guarantees</b> (each with its test: docs/guarantees.md). Commands for one aggregate are handled in the order they
 * were dispatched, also after one of them fails. A command that fails before its events are appended (handler,
 * prepare-commit handler, the append) has none of its events stored or published, and the next command sees the
 * aggregate as the successful commands left it; a subscriber or commit handler that throws after the append is
 * reported without undoing it. Once {@code dispatch} returns normally, the callback is called exactly once, on the
 * complete stage's thread, after the command's events are stored (and published), also for every failure (no
 * handler, no target, unknown aggregate, full ring, not running). {@code dispatch} itself throws only where Axon's
 * buses do (a null argument, a failing dispatch interceptor or message monitor), without calling the callback. What
 * a callback throws is logged (docs/design.md, "Callbacks on pipeline threads", for commands run in place).
 * <p>
 * <b>Threads.</b> {@code dispatch} may be called from any number of threads at once. The bus starts its threads in
 * {@link #start()} (called by Axon's lifecycle when registered in a {@link Configuration}), and {@link #shutdown()}
 * refuses new commands, then drains every command in flight.
 * <p>
 * Build one with {@link #builder()}; aggregates configured with Axon's {@code configureAggregate} are routed through
 * the ring automatically (see {@link io.github.ringbus.RingbusConfigurerModule}), or register them directly
 * with {@link #registerAggregate(Class)}. Tests: {@code QuickStartTest}, {@code CommandHandlingTest}.
 */
public final class RingCommandBus implements CommandBus, Lifecycle {

    private static final Logger logger = LoggerFactory.getLogger(RingCommandBus.class);

    private final RingSettings settings;
    private final CommandRoutes routes = new CommandRoutes();
    /** The builder's interceptors and those registered later; read on every dispatch (copy-on-write). */
    private final List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors;
    private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors;
    private final Pipeline pipeline;
    /** Start, shutdown, and the gate dispatchers pass to enter the ring. */
    private final RingLifecycle lifecycle;
    /** The aggregate types whose commands this bus runs. */
    private final RingAggregates aggregates;
    /** The command handlers subscribed on this bus, and the buses they are subscribed on as well. */
    private final MirroredSubscriptions subscriptions = new MirroredSubscriptions(routes);
    /** The way in for dispatched commands. */
    private final Dispatches dispatches;

    private RingCommandBus(RingSettings settings) {
        this.settings = settings;
        this.dispatchInterceptors = new CopyOnWriteArrayList<>(settings.dispatchInterceptors());
        this.handlerInterceptors = new CopyOnWriteArrayList<>(settings.handlerInterceptors());
        FailFastReads reads = new FailFastReads(settings.readTransactionManager()); // fail at once while it is away
        this.pipeline = new Pipeline(settings, routes, handlerInterceptors, reads);
        // Where every snapshot of this bus's aggregates is taken; its thread starts with the first; closed at shutdown.
        OffPipelineSnapshots snapshots = new OffPipelineSnapshots(settings.threadNamePrefix() + "-snapshot");
        // Where missing aggregates are read ahead of the preload stage; closed once the stages stopped.
        ColdReads coldReads = new ColdReads(settings.readAheadThreads(), settings.threadNamePrefix());
        this.lifecycle = new RingLifecycle(pipeline, settings.shutdownTimeout(),
                                           () -> { coldReads.close(); snapshots.close(); });
        // Claims slots as the full-ring policy says, and reports the commands that cannot enter.
        Admission admission = new Admission(pipeline, lifecycle, settings.fullRingPolicy(), settings.fullRingTimeout());
        // Commands dispatched from the pipeline's own threads: run in place, or refused when waited for.
        NestedDispatch nested = new NestedDispatch(routes,
                                                   command -> Dispatches.intercept(dispatchInterceptors, command),
                                                   handlerInterceptors, settings.messageMonitor(),
                                                   settings.rollbackConfiguration(), pipeline,
                                                   pipeline.facts().handlerThreadPreloads());
        this.dispatches = new Dispatches(settings, routes, dispatchInterceptors, lifecycle, admission, nested,
                                         pipeline.callbacks());
        this.aggregates = new RingAggregates(routes, settings.eventStore(), settings.cacheSize(), coldReads,
                                             reads.reads(), pipeline::completedSequence, snapshots,
                                             snapshots.offPipeline(settings.snapshotTriggerDefinition()),
                                             settings.commandTargetResolver(), dispatches::deliver,
                                             nested::lendForLoad, pipeline::awaitCommandsSoFar);
    }

    /** @return a builder with defaults suited to the machine it runs on; only the event store is required */
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
    public <C, R> void dispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        Objects.requireNonNull(command, "RingCommandBus.dispatch: the command must not be null");
        Objects.requireNonNull(callback, "RingCommandBus.dispatch: the callback must not be null");
        dispatches.dispatch(command, callback);
    }

    /**
     * Dispatches many commands at once: a bulk load, an import, a saga's fan-out. The commands enter the ring in
     * their order, in consecutive slots, claimed and handed over a chunk at a time (up to a quarter of the ring, at
     * most 256 per claim) rather than one by one, so a command of the list never overtakes an earlier one. Each
     * command is then handled, stored and completed as if dispatched alone: the callback is called exactly once per
     * command, with that command as it left the dispatch interceptors, where any callback is called (at once on this
     * thread for a command refused before the ring); one command's failure does not touch the others. When the
     * ring has no room for a chunk: {@code FAIL_FAST} fails the chunk with every command after it (those before it
     * stay dispatched); {@code BLOCK} waits, asking for fewer slots at a time while the ring stays too full for the
     * chunk, until every command is in; {@code BLOCK_WITH_TIMEOUT} does the same within one timeout for the whole
     * call, and fails the commands that found no slot by then. Once a shutdown begins, the commands of the list not yet
     * in the ring are refused, each with a {@code ShutdownInProgressException}: shutdown waits for the ring to drain,
     * not for the rest of the list.
     * <p>
     * From a pipeline thread (a handler, a callback, a subscribing event handler), or with tracing on (each command
     * needs its own dispatch span), the commands are dispatched one by one, in order, as by {@link #dispatch}.
     *
     * @param commands the commands, in the order they are to run; may be empty
     * @param callback called once for each command
     * @throws NullPointerException when the list, an element of it or the callback is null (nothing is dispatched)
     * @throws RuntimeException     what a dispatch interceptor or the message monitor threw: nothing is dispatched
     *                              and no callback is called (the commands the monitor had taken are reported to
     *                              it as failed)
     */
    public void dispatchAll(List<? extends CommandMessage<?>> commands, CommandCallback<Object, Object> callback) {
        Objects.requireNonNull(commands, "RingCommandBus.dispatchAll: the list of commands must not be null");
        Objects.requireNonNull(callback, "RingCommandBus.dispatchAll: the callback must not be null");
        for (int i = 0; i < commands.size(); i++) {
            if (commands.get(i) == null) {
                throw new NullPointerException("RingCommandBus.dispatchAll: command " + i + " of " + commands.size()
                                                       + " is null; nothing was dispatched");
            }
        }
        if (!commands.isEmpty()) {
            dispatches.dispatchAll(commands, callback);
        }
    }

    // --- handlers, aggregates, interceptors ------------------------------------------------------------------------

    @Override
    public Registration subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        aggregates.routeHandSubscribed(commandName, handler);
        return subscriptions.subscribe(commandName, handler);
    }

    /**
     * Subscribes every command handler of this bus, those subscribed so far and those subscribed later, on another
     * bus too (and cancels them there when they are cancelled here). For an application component that dispatches on
     * a {@code SimpleCommandBus} of its own, on its own thread (several commands in one Unit of Work and transaction,
     * say): its commands find the same handlers, and run outside the ring. An event-sourced aggregate that such a
     * command loads or creates is read from the event store, not from the ring's cache, and once its Unit of Work
     * has committed, the ring reads its cached aggregates from the event store again before their next command, so
     * that no ring command works on a state that misses those events. A ring command already being handled on the
     * older state when the other bus's command commits fails at the append if the storage engine refuses a second
     * event at the same sequence number (JDBC and JPA engines do; Axon's in-memory engine does not), as it would if
     * another node had stored it. The Spring Boot support does this for a {@code SimpleCommandBus} bean that the
     * application asks for.
     *
     * @param other the bus to subscribe this bus's command handlers on as well
     */
    public void subscribeHandlersAlsoOn(CommandBus other) {
        Objects.requireNonNull(other, "other bus must not be null");
        subscriptions.alsoOn(other);
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
     * Routes an annotated event-sourced aggregate's commands through this bus without an Axon configuration:
     * creates its repository and subscribes Axon's {@code AggregateAnnotationCommandHandler} for it. (With an Axon
     * configuration or Spring Boot, aggregates are routed without this call: see {@link RingbusConfigurerModule}.)
     *
     * @param aggregateType the aggregate type, with {@code @CommandHandler}s and {@code @EventSourcingHandler}s
     * @param <A>           the aggregate type
     * @return the aggregate type's repository, which keeps its aggregates in memory for the ring
     */
    public <A> Repository<A> registerAggregate(Class<A> aggregateType) {
        return aggregates.registerAggregate(aggregateType, this);
    }

    /**
     * As {@link #registerAggregate(Class)}, for an application that builds its aggregates' repositories by hand (as
     * with Axon's {@code DisruptorCommandBus.createRepository}): the aggregate roots are made by the given factory
     * (e.g. one that injects dependencies), and the aggregate's handlers are inspected with the given parameter
     * resolvers and handler definition.
     *
     * @param aggregateType            the aggregate type
     * @param aggregateFactory         makes the empty aggregate roots that events are replayed on
     * @param parameterResolverFactory resolves the parameters of the aggregate's handlers
     * @param handlerDefinition        how the aggregate's handlers are found and wrapped
     * @param <A>                      the aggregate type
     * @return the aggregate type's repository, which keeps its aggregates in memory for the ring
     */
    public <A> Repository<A> registerAggregate(Class<A> aggregateType, AggregateFactory<A> aggregateFactory,
                                               ParameterResolverFactory parameterResolverFactory,
                                               HandlerDefinition handlerDefinition) {
        return aggregates.registerAggregate(
                aggregateType,
                AnnotatedAggregateMetaModelFactory.inspectAggregate(
                        Objects.requireNonNull(aggregateType, "aggregateType"),
                        Objects.requireNonNull(parameterResolverFactory, "parameterResolverFactory"),
                        Objects.requireNonNull(handlerDefinition, "handlerDefinition")),
                Objects.requireNonNull(aggregateFactory, "aggregateFactory"), this);
    }

    /** @return the aggregate types this bus runs, for the Axon configuration support */
    RingAggregates aggregates() {
        return aggregates;
    }

    /**
     * Stops trusting the aggregates this bus keeps in memory: each is read from the event store again before its next
     * command. For a node of several (the local segment of Axon's {@code DistributedCommandBus}) whose share of the
     * aggregates changed: an aggregate another node handled in the meantime must not be acted on from a copy cached
     * before. Any thread; returns at once.
     * <p>
     * Carried out on the handler thread that owns each aggregate, before the first command it handles after this call
     * returned: it reads the aggregate's events from the store and then applies this node's own events of commands
     * still on their way to the store (so commands in flight lose nothing). Aggregates that get no command cost
     * nothing. If another node stored an event in the place of one of this node's events in flight, the append of that
     * event fails and the aggregate is read again, as after any failed append.
     */
    public void evictCachedAggregates() {
        aggregates.evictions().request();
    }

    // --- lifecycle -------------------------------------------------------------------------------------------------

    @Override
    public void registerLifecycleHandlers(LifecycleRegistry lifecycle) {
        lifecycle.onStart(Phase.LOCAL_MESSAGE_HANDLER_REGISTRATIONS - 1, this::start);
        // After event processors, deadlines and inbound connectors stopped (what they send then is handled), before
        // subscribing processors unsubscribe (phase 0): docs/spring-boot.md, "Stopping".
        lifecycle.onShutdown(Phase.OUTBOUND_COMMAND_CONNECTORS + 1, this::shutdown);
    }

    /**
     * Starts the stage threads; commands are accepted from now on. Does nothing when the bus runs.
     *
     * @throws IllegalStateException when the bus was shut down (a bus cannot be restarted)
     */
    public void start() {
        boolean starting = lifecycle.state() == RingLifecycle.State.NEW;
        lifecycle.start();
        if (starting && lifecycle.state() == RingLifecycle.State.RUNNING) {
            logger.info(startLine());
        }
    }

    /** @return the stage threads' graph and what follows from it (see {@code Pipeline.shape()}) */
    String stageShape() {
        return pipeline.shape();
    }

    /** @return the line the bus logs when it starts: its settings in force */
    String startLine() {
        return settings.describe();
    }

    /**
     * Refuses new commands (their callbacks receive a {@link ShutdownInProgressException}), waits for dispatches
     * under way to hand their command over, and drains the ring: every command in flight completes and its callback
     * fires. After the shutdown timeout the ring is halted and its threads get the timeout again (at most 10 s) to
     * end; then each command still in the ring gets exactly one callback: its real outcome when the store is done with
     * it, a {@link ShutdownInProgressException} when it never reached the store, and a
     * {@link CommitOutcomeUnknownException} when a store thread still held by user code or the event store may yet
     * store it. Calling it again has no effect.
     * <p>
     * Called on one of the ring's own threads (from a command handler, a subscribing event processor or a callback,
     * e.g. through Axon's {@code Configuration.shutdown()}), it cannot wait for the ring, which waits for that very
     * thread: new commands are refused from that call on, the call returns at once, and the ring drains as above on
     * a thread of its own once the calling code has returned, its own command included.
     */
    public void shutdown() {
        lifecycle.shutdownAsked(settings.threadNamePrefix() + "-shutdown",
                                () -> pipeline.ringSize() - pipeline.remainingCapacity());
    }

    /** @return true between {@link #start()} and {@link #shutdown()} */
    public boolean isRunning() {
        return lifecycle.state() == RingLifecycle.State.RUNNING;
    }

    /** @return how many slots of the ring are free now */
    public long remainingCapacity() {
        return pipeline.remainingCapacity();
    }

    /** @return the number of slots in the ring */
    public int ringSize() {
        return pipeline.ringSize();
    }

    /** @return the store failing every attempt ({@link StoreFailure}), or null while it stores; for health checks */
    public StoreFailure storeFailure() {
        return pipeline.storeFailure();
    }

    /** @return how many commands failed in the store stage in the last minute (refused, or not stored); for health */
    public long storeFailedCommandsInLastMinute() {
        return pipeline.storeFailedCommandsInLastMinute();
    }

    /** @return the round trip to the database the bus was built for ({@code databaseLatency}), or null if not given */
    public Duration databaseLatency() {
        return settings.databaseLatency();
    }

    /** @return each stage thread's CPU time and time in the store so far ({@link StageThreadTimes}); for metrics */
    public List<StageThreadTimes> stageThreadTimes() {
        return pipeline.stageThreadTimes();
    }

    /** @return the number of handler threads */
    public int handlerThreads() {
        return settings.handlerThreads();
    }

    /** @return the number of store threads (store shards) */
    public int storeThreads() {
        return settings.storeThreads();
    }

    /** @return how many aggregates missing from the cache may be read ahead of their commands at once (0: none) */
    public int readAheadThreads() {
        return settings.readAheadThreads();
    }

    /** @return the topology the stages run in, as chosen or set */
    public Topology topology() {
        return settings.topology();
    }

    /**
     * @param commandBus an Axon command bus
     * @return the ringbus bus it is, or delegates to locally (unwrapped); null when none
     */
    public static RingCommandBus localRingOf(CommandBus commandBus) {
        if (commandBus instanceof RingCommandBus ring) {
            return ring;
        }
        return commandBus instanceof Distributed<?> distributed
                && distributed.localSegment() instanceof RingCommandBus local ? local : null;
    }

    /**
     * The settings of a {@link RingCommandBus}. Every setter checks its value at once and throws an
     * {@link AxonConfigurationException} naming the setting; {@link #build()} checks that the event store was given.
     * Defaults: see each setter.
     */
    public static final class Builder {

        private EventStore eventStore;
        private int ringSize = Defaults.RING_SIZE;
        private int handlerThreads = Defaults.handlerThreads();
        /** 0: chosen from the cores, the event store and the transaction manager when built. */
        private int storeThreads;
        /** Null: chosen from the cores and the handler threads when built. */
        private Topology topology;
        private WaitStrategyChoice waitStrategy = Defaults.WAIT_STRATEGY;
        private FullRingPolicy fullRingPolicy = Defaults.FULL_RING_POLICY;
        private Duration fullRingTimeout = Defaults.FULL_RING_TIMEOUT;
        private PublishMode publishMode = Defaults.PUBLISH_MODE;
        private int cacheSize = Defaults.CACHE_SIZE;
        /** -1: chosen from the machine and {@link #connectionPoolSize} at build time. */
        private int readAheadThreads = -1;
        /** 0: not known. */
        private int connectionPoolSize;
        private Duration databaseLatency;
        private int maxStoreBatchEvents = Defaults.MAX_STORE_BATCH_EVENTS;
        private CommandTargetResolver commandTargetResolver = new AnnotatedTargetResolver();
        private TransactionManager transactionManager = NoTransactionManager.INSTANCE;
        private TransactionManager readTransactionManager;
        private RollbackConfiguration rollbackConfiguration = RollbackConfigurationType.UNCHECKED_EXCEPTIONS;
        private MessageMonitor<? super CommandMessage<?>> messageMonitor = NoOpMessageMonitor.INSTANCE;
        private SnapshotTriggerDefinition snapshotTriggerDefinition = NoSnapshotTriggerDefinition.INSTANCE;
        private Snapshotter snapshotter;
        private int snapshotThreshold;
        private final List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors =
                new CopyOnWriteArrayList<>();
        private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors =
                new CopyOnWriteArrayList<>();
        private String threadNamePrefix = Defaults.THREAD_NAME_PREFIX;
        private Duration shutdownTimeout = Defaults.SHUTDOWN_TIMEOUT;
        private PipelineMonitor pipelineMonitor = PipelineMonitor.NONE;
        private CommandBusSpanFactory spanFactory;

        private Builder() {
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

        /**
         * Store threads, each storing (its own transactions, so its own database connection), publishing and
         * completing the commands of its share of the aggregates: one aggregate's events always go through the same
         * one, in order. Between 1 and 64. Default, when there is a transaction manager and the engine is not Axon's
         * in-memory one: one per two cores from 8 cores on, one per four below (one up to 7 cores), at most half of
         * {@link #connectionPoolSize} when given; otherwise 1 (an engine that appends under one lock,
         * as Axon's in-memory engine does, gains nothing from several). More than one needs topology
         * {@link Topology#FULL} (chosen by default then), a storage engine that takes appends from several threads
         * at once (Axon's JDBC and JPA engines do) and a connection pool with a connection for each.
         */
        public Builder storeThreads(int storeThreads) {
            check(storeThreads >= 1 && storeThreads <= 64,
                  "storeThreads must be between 1 and 64, but was " + storeThreads);
            this.storeThreads = storeThreads;
            return this;
        }

        private int chosenStoreThreads(Topology chosenTopology, int defaultStoreThreads) {
            if (storeThreads != 0) {
                check(chosenTopology != Topology.COMPACT || storeThreads == 1,
                      "topology COMPACT runs one store thread, but storeThreads is " + storeThreads
                              + ": set storeThreads(1), or topology FULL");
                return storeThreads;
            }
            return chosenTopology == Topology.COMPACT ? 1 : defaultStoreThreads;
        }

        /**
         * How many threads run the stages. Default: {@link Topology#COMPACT} on machines of up to 4 cores when there
         * is one handler thread and one store thread (measured fastest on 2 cores), else {@link Topology#FULL}.
         * {@link Topology#COMPACT} needs {@code handlerThreads} and {@code storeThreads} of 1.
         */
        public Builder topology(Topology topology) {
            this.topology = require(topology, "topology");
            return this;
        }

        private Topology chosenTopology(int storeThreadsWanted) {
            if (topology == null) {
                return Defaults.topology(handlerThreads, storeThreadsWanted);
            }
            check(topology != Topology.COMPACT || handlerThreads == 1,
                  "topology COMPACT runs one handler thread, but handlerThreads is " + handlerThreads
                          + ": set handlerThreads(1), or topology FULL");
            return topology;
        }

        /** How stage threads wait for work. Default {@link WaitStrategyChoice#ADAPTIVE}. */
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

        /**
         * How many aggregates missing from the cache may be read from the event store at once, ahead of their
         * commands: when the preload stage misses an aggregate, it starts reading the other missing aggregates of the
         * commands behind it on threads of their own (each read takes a database connection while it runs), instead
         * of reading them one after another on its thread. Matters when the aggregates in use outnumber
         * {@link #cacheSize}, and after a start. Between 0 (every missing aggregate read by the preload stage itself)
         * and 64; default four per core, at least 16 and at most 64, more where the {@link #databaseLatency} is given
         * and high (as many as the reads this machine keeps up with take at that round trip), and at most half the
         * {@link #connectionPoolSize} when it is given. The threads start with the first such read and end after 30 s
         * without one.
         */
        public Builder readAheadThreads(int readAheadThreads) {
            check(readAheadThreads >= 0 && readAheadThreads <= 64,
                  "readAheadThreads must be between 0 and 64, but was " + readAheadThreads);
            this.readAheadThreads = readAheadThreads;
            return this;
        }

        /**
         * The size of the connection pool that the event store reads and appends through, when the bus should keep
         * its default within it: the default {@link #readAheadThreads} is then at most half of it, since each read
         * holds a connection while it runs. Not needed when {@code readAheadThreads} is set. Spring Boot sets it from
         * the application's {@code DataSource} (HikariCP, Commons DBCP 2, Tomcat JDBC). Positive.
         */
        public Builder connectionPoolSize(int connectionPoolSize) {
            check(connectionPoolSize >= 1, "connectionPoolSize must be positive, but was " + connectionPoolSize);
            this.connectionPoolSize = connectionPoolSize;
            return this;
        }

        /**
         * The round trip between the application and its database, when known: the default
         * {@link #readAheadThreads} then reads as many missing aggregates at once as it takes to keep up with this
         * machine's cores at that round trip (a read takes three of them), up to 64. Not needed when
         * {@code readAheadThreads} is set. Spring Boot measures it on the application's {@code DataSource} at start-up
         * unless {@code ringbus.database-latency} states it. Zero (a database on this machine) to 10 s; default: not
         * known (the defaults by cores alone).
         */
        public Builder databaseLatency(Duration databaseLatency) {
            require(databaseLatency, "databaseLatency");
            check(!databaseLatency.isNegative() && databaseLatency.compareTo(Duration.ofSeconds(10)) <= 0,
                  "databaseLatency must be between 0 and 10 s, but was " + databaseLatency);
            this.databaseLatency = databaseLatency;
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

        /**
         * What each read of an aggregate from the store (its snapshot, then its events) runs in, on the preload
         * stage's thread or a read-ahead thread: one transaction of it per read, so that the read takes one database
         * connection rather than one per step. Default: the {@link #transactionManager}. With ringbus's
         * {@code io.github.ringbus.jdbc.JdbcTransactionManager}, give its {@code autoCommitReads()}: the read then takes
         * one connection and sends no {@code COMMIT}, a round trip fewer per read.
         */
        public Builder readTransactionManager(TransactionManager readTransactionManager) {
            this.readTransactionManager = require(readTransactionManager, "readTransactionManager");
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

        /**
         * How long shutdown waits for commands in flight; then it waits as long again, at most 10 s, for the stage
         * threads to end, and fails what is left (see {@link RingCommandBus#shutdown()}). Positive; default 30 s.
         */
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

        /**
         * Takes from a plain Axon {@link Configuration} what Axon's default command bus takes from it
         * ({@code DefaultConfigurer.defaultCommandBus}), so that commands behave as they do there: its event store,
         * its {@link TransactionManager} (none when it has none), its message monitor for the command bus, its
         * {@link CommandBusSpanFactory} when tracing is on (a span factory other than Axon's no-op one), and a
         * {@link CorrelationDataInterceptor} over its correlation data providers, so that events carry the
         * command's correlation data ({@code correlationId}, {@code traceId}, and whatever providers the application
         * registered). Call it in {@code configureCommandBus(c -> RingCommandBus.builder().axonConfiguration(c)
         * ...build())}; settings made after it replace what it set. The Spring Boot support does the same from the
         * application context.
         *
         * @param configuration the Axon configuration the bus is built for
         */
        public Builder axonConfiguration(Configuration configuration) {
            require(configuration, "axonConfiguration");
            eventStore(configuration.eventStore());
            transactionManager(configuration.getComponent(TransactionManager.class,
                                                          () -> NoTransactionManager.INSTANCE));
            messageMonitor(configuration.messageMonitor(CommandBus.class, "commandBus"));
            CommandBusSpanFactory tracing = configuration.getComponent(CommandBusSpanFactory.class);
            SpanFactory spans = configuration.getComponent(SpanFactory.class);
            if (tracing != null && !(tracing instanceof DefaultCommandBusSpanFactory
                    && (spans == null || spans instanceof NoOpSpanFactory))) {
                spanFactory(tracing);
            }
            return handlerInterceptor(new CorrelationDataInterceptor<CommandMessage<?>>(
                    configuration.correlationDataProviders()));
        }

        /**
         * @return a bus with these settings, not yet started
         * @throws AxonConfigurationException when no event store was given
         */
        public RingCommandBus build() {
            check(eventStore != null, "eventStore is required: call eventStore(...) on RingCommandBus.builder()");
            SnapshotTriggerDefinition busTrigger = snapshotter != null
                    ? new EventCountSnapshotTriggerDefinition(snapshotter, snapshotThreshold)
                    : snapshotTriggerDefinition;
            int defaultStoreThreads = Defaults.storeThreads(eventStore, transactionManager,
                                                            Runtime.getRuntime().availableProcessors(),
                                                            connectionPoolSize);
            Topology chosenTopology = chosenTopology(storeThreads != 0 ? storeThreads : defaultStoreThreads);
            return new RingCommandBus(new RingSettings(
                    eventStore, ringSize, handlerThreads, chosenStoreThreads(chosenTopology, defaultStoreThreads),
                    chosenTopology,
                    waitStrategy, fullRingPolicy,
                    fullRingTimeout, publishMode, cacheSize,
                    readAheadThreads >= 0 ? readAheadThreads : defaultReadAheadThreads(),
                    maxStoreBatchEvents,
                    commandTargetResolver,
                    transactionManager, chosenReadTransactionManager(), rollbackConfiguration,
                    messageMonitor, busTrigger, dispatchInterceptors, handlerInterceptors, threadNamePrefix,
                    shutdownTimeout, pipelineMonitor, spanFactory, databaseLatency));
        }

        /**
         * The default read-ahead threads, from the cores, the database's round trip and the pool; says so in the log
         * when the pool holds them well below what a database far away asks for ({@link Defaults#readAheadAdvice}).
         */
        private int defaultReadAheadThreads() {
            int cores = Runtime.getRuntime().availableProcessors();
            int chosen = Defaults.readAheadThreads(connectionPoolSize, databaseLatency, cores);
            String advice = Defaults.readAheadAdvice(chosen, connectionPoolSize, databaseLatency, cores);
            if (advice != null) {
                logger.info(advice);
            }
            return chosen;
        }

        private TransactionManager chosenReadTransactionManager() {
            return readTransactionManager != null ? readTransactionManager : transactionManager;
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
