package io.github.ringbus.benchmarks;

import io.github.ringbus.RingEventStore;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import java.util.Arrays;
import java.util.function.Function;
import org.axonframework.commandhandling.AsynchronousCommandBus;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.disruptor.commandhandling.DisruptorCommandBus;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;

/**
 * The command buses under test, each named as the benchmarks' {@code bus} parameter, with the way the
 * {@link Account} aggregate is configured beside it.
 *
 * <p>Buses that run Axon's {@code EventSourcingRepository} get an {@link AllInMemoryCache}, so that no bus
 * pays for replaying aggregates. Axon's {@code AggregateConfigurer} builds the repository itself for a
 * {@link DisruptorCommandBus} (and ringbus's {@code ConfigurerModule} does for ringbus), so there the
 * aggregate is configured plainly and the bus decides about caching.
 */
public enum BusChoice {

    /** Axon's {@link SimpleCommandBus}: the command runs on the dispatching thread. */
    SIMPLE("simple", true, configuration -> SimpleCommandBus.builder()
                                                            .transactionManager(transactions(configuration))
                                                            .build()),

    /** Axon's {@link AsynchronousCommandBus} with its default executor (a cached thread pool). */
    ASYNC("async", true, configuration -> {
        AsynchronousCommandBus bus = AsynchronousCommandBus.builder()
                                                           .transactionManager(transactions(configuration))
                                                           .build();
        configuration.onShutdown(bus::shutdown);
        return bus;
    }),

    /** Axon's {@link DisruptorCommandBus} with its defaults (no cache beyond its weak first-level cache). */
    AXON_DISRUPTOR("axon-disruptor", false, configuration -> stoppedOnShutdown(
            configuration, DisruptorCommandBus.builder()
                                              .transactionManager(transactions(configuration))
                                              .build())),

    /** Axon's {@link DisruptorCommandBus} given an {@link AllInMemoryCache}. */
    AXON_DISRUPTOR_CACHED("axon-disruptor-cached", false, configuration -> stoppedOnShutdown(
            configuration, DisruptorCommandBus.builder()
                                              .transactionManager(transactions(configuration))
                                              .cache(new AllInMemoryCache())
                                              .build())),

    /** ringbus with its default settings. */
    RINGBUS("ringbus", false, configuration -> RingBusFactory.withDefaults(
            configuration.eventStore(), transactions(configuration))),

    /** ringbus with one store thread (what every ringbus ran before store threads existed). */
    RINGBUS_STORE_1("ringbus-store-1", false, configuration -> RingBusFactory.withStoreThreads(
            configuration.eventStore(), transactions(configuration), 1)),

    /** ringbus with two store threads, each committing its share of the aggregates on its own connection. */
    RINGBUS_STORE_2("ringbus-store-2", false, configuration -> RingBusFactory.withStoreThreads(
            configuration.eventStore(), transactions(configuration), 2)),

    /** ringbus with four store threads. */
    RINGBUS_STORE_4("ringbus-store-4", false, configuration -> RingBusFactory.withStoreThreads(
            configuration.eventStore(), transactions(configuration), 4)),

    /** ringbus with eight store threads. */
    RINGBUS_STORE_8("ringbus-store-8", false, configuration -> RingBusFactory.withStoreThreads(
            configuration.eventStore(), transactions(configuration), 8)),

    /** ringbus with sixteen store threads. */
    RINGBUS_STORE_16("ringbus-store-16", false, configuration -> RingBusFactory.withStoreThreads(
            configuration.eventStore(), transactions(configuration), 16)),

    /**
     * ringbus whose aggregate cache holds a tenth of the bank's accounts: most commands find their aggregate
     * missing and it is read from the event store first (the cold reads of a working set larger than the cache, or
     * of the first minutes after a restart).
     */
    RINGBUS_COLD("ringbus-cold", false, configuration -> RingBusFactory.withCacheSize(
            configuration.eventStore(), transactions(configuration), BankApplication.ACCOUNTS / 10, 4)),

    /** As {@code ringbus-cold}, every missing aggregate read by the preload stage itself (no reads ahead). */
    RINGBUS_COLD_SERIAL("ringbus-cold-serial", false, configuration -> RingBusFactory.withCacheSize(
            configuration.eventStore(), transactions(configuration), BankApplication.ACCOUNTS / 10, 0)),

    /** As {@code ringbus-cold}, with 16 read-ahead threads. */
    RINGBUS_COLD_16("ringbus-cold-16", false, configuration -> RingBusFactory.withCacheSize(
            configuration.eventStore(), transactions(configuration), BankApplication.ACCOUNTS / 10, 16)),

    /** ringbus with two handler threads (FULL topology); see {@link RingBusFactory#tuned}. */
    RINGBUS_TUNED("ringbus-tuned", false, configuration -> RingBusFactory.tuned(
            configuration.eventStore(), transactions(configuration))),

    /** ringbus on one thread per stage, stage threads sleeping when idle (the defaults before topologies). */
    RINGBUS_FULL_SLEEPING("ringbus-full-sleeping", false, configuration -> RingBusFactory.with(
            configuration.eventStore(), transactions(configuration), Topology.FULL, WaitStrategyChoice.SLEEPING)),

    /** ringbus on one thread per stage, stage threads blocking after a millisecond idle. */
    RINGBUS_FULL_ADAPTIVE("ringbus-full-adaptive", false, configuration -> RingBusFactory.with(
            configuration.eventStore(), transactions(configuration), Topology.FULL, WaitStrategyChoice.ADAPTIVE)),

    /** ringbus on two threads (preload and handle; store and complete), sleeping when idle. */
    RINGBUS_COMPACT_SLEEPING("ringbus-compact-sleeping", false, configuration -> RingBusFactory.with(
            configuration.eventStore(), transactions(configuration), Topology.COMPACT,
            WaitStrategyChoice.SLEEPING)),

    /** ringbus on two threads, blocking after a millisecond idle. */
    RINGBUS_COMPACT_ADAPTIVE("ringbus-compact-adaptive", false, configuration -> RingBusFactory.with(
            configuration.eventStore(), transactions(configuration), Topology.COMPACT,
            WaitStrategyChoice.ADAPTIVE)),

    /** ringbus on one thread per stage, blocking whenever no command is coming, parking behind an earlier stage. */
    RINGBUS_FULL_BLOCKING("ringbus-full-blocking", false, configuration -> RingBusFactory.with(
            configuration.eventStore(), transactions(configuration), Topology.FULL, WaitStrategyChoice.BLOCKING)),

    /** ringbus on two threads, blocking whenever no command is coming, parking behind an earlier stage. */
    RINGBUS_COMPACT_BLOCKING("ringbus-compact-blocking", false, configuration -> RingBusFactory.with(
            configuration.eventStore(), transactions(configuration), Topology.COMPACT,
            WaitStrategyChoice.BLOCKING));

    private final String parameterName;
    private final boolean axonCache;
    private final Function<Configuration, CommandBus> commandBus;

    BusChoice(String parameterName, boolean axonCache, Function<Configuration, CommandBus> commandBus) {
        this.parameterName = parameterName;
        this.axonCache = axonCache;
        this.commandBus = commandBus;
    }

    /** The bus whose parameter name is {@code parameterName}, e.g. {@code "axon-disruptor-cached"}. */
    public static BusChoice named(String parameterName) {
        return Arrays.stream(values())
                     .filter(choice -> choice.parameterName.equals(parameterName))
                     .findFirst()
                     .orElseThrow(() -> new IllegalArgumentException("No bus named '" + parameterName + "'"));
    }

    /** The name used as the benchmarks' {@code bus} parameter. */
    public String parameterName() {
        return parameterName;
    }

    /** Builds this bus for {@code configuration}; the bus stops when the configuration shuts down. */
    CommandBus build(Configuration configuration) {
        return commandBus.apply(configuration);
    }

    /** How the {@link Account} aggregate is configured beside this bus. */
    AggregateConfigurer<Account> accountConfiguration() {
        AggregateConfigurer<Account> account = AggregateConfigurer.defaultConfiguration(Account.class);
        return axonCache ? account.configureCache(configuration -> new AllInMemoryCache()) : account;
    }

    /**
     * The event store on {@code engine} that an Axon user would configure beside this bus: Axon's
     * {@link EmbeddedEventStore} (what {@code configureEmbeddedEventStore} builds), or for ringbus the
     * {@link RingEventStore} its README recommends. Both are shut down with the configuration.
     */
    EventStore eventStore(EventStorageEngine engine, Configuration configuration) {
        EmbeddedEventStore store = parameterName.startsWith("ringbus")
                ? RingEventStore.builder().storageEngine(engine).build()
                : EmbeddedEventStore.builder().storageEngine(engine).build();
        configuration.onShutdown(store::shutDown);
        return store;
    }

    /**
     * The application's {@link TransactionManager}, as Axon's own default command bus takes it: every bus runs its
     * commands in transactions of it ({@link NoTransactionManager} with the in-memory event store, one JDBC
     * transaction per command, or per ringbus batch, with PostgreSQL).
     */
    private static TransactionManager transactions(Configuration configuration) {
        return configuration.getComponent(TransactionManager.class, NoTransactionManager::instance);
    }

    private static DisruptorCommandBus stoppedOnShutdown(Configuration configuration, DisruptorCommandBus bus) {
        configuration.onShutdown(bus::stop);
        return bus;
    }
}
