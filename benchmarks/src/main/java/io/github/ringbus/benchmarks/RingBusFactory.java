package io.github.ringbus.benchmarks;

import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.github.ringbus.PipelineMonitor;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import java.lang.ref.WeakReference;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Every call into ringbus's API that the benchmarks make, in one place, so that a change to that API is
 * an edit here only.
 *
 * <p>Inside an Axon {@code Configuration} nothing else is needed: the configuration starts and stops the
 * bus (it is a {@code Lifecycle}), and ringbus's {@code ConfigurerModule} routes aggregates through it.
 */
public final class RingBusFactory {

    /** Every ring built here, for {@link io.github.ringbus.benchmarks.report.Utilization} (weakly: a trial's ends). */
    private static final List<WeakReference<RingCommandBus>> BUILT = new CopyOnWriteArrayList<>();

    private RingBusFactory() {
    }

    private static RingCommandBus built(RingCommandBus bus) {
        BUILT.removeIf(reference -> reference.get() == null);
        BUILT.add(new WeakReference<>(bus));
        return bus;
    }

    /** @return the rings built here that are running now (the benchmark's), for the utilization profiler */
    public static List<RingCommandBus> running() {
        List<RingCommandBus> running = new ArrayList<>();
        for (WeakReference<RingCommandBus> reference : BUILT) {
            RingCommandBus bus = reference.get();
            if (bus != null && bus.isRunning()) {
                running.add(bus);
            }
        }
        return running;
    }

    /** ringbus as it comes: only the event store is given. */
    public static RingCommandBus withDefaults(EventStore eventStore) {
        return withDefaults(eventStore, NoTransactionManager.INSTANCE);
    }

    /**
     * ringbus as it comes, with the application's transaction manager: the store stage appends each batch of
     * commands in one transaction of it (group commit).
     */
    public static RingCommandBus withDefaults(EventStore eventStore, TransactionManager transactions) {
        return built(RingCommandBus.builder().eventStore(eventStore).transactionManager(transactions)
                                   .readTransactionManager(readsIn(transactions)).build());
    }

    /** ringbus with one handler thread and the given topology and wait strategy, to compare them. */
    public static RingCommandBus with(EventStore eventStore, TransactionManager transactions, Topology topology,
                                      WaitStrategyChoice waitStrategy) {
        return withMonitor(eventStore, transactions, topology, waitStrategy, PipelineMonitor.NONE);
    }

    /** ringbus with one handler thread, the given topology and wait strategy, and a monitor of its stages. */
    public static RingCommandBus withMonitor(EventStore eventStore, TransactionManager transactions,
                                             Topology topology, WaitStrategyChoice waitStrategy,
                                             PipelineMonitor monitor) {
        return built(RingCommandBus.builder()
                             .eventStore(eventStore)
                             .transactionManager(transactions)
                             .readTransactionManager(readsIn(transactions))
                             .handlerThreads(1)
                             .topology(topology)
                             .waitStrategy(waitStrategy)
                             .pipelineMonitor(monitor)
                             .build());
    }

    /**
     * ringbus as it comes but with the given number of store threads (store shards, each committing on its own
     * connection), to compare them; more than one runs the {@code FULL} topology.
     */
    public static RingCommandBus withStoreThreads(EventStore eventStore, TransactionManager transactions,
                                                  int storeThreads) {
        return built(RingCommandBus.builder()
                             .eventStore(eventStore)
                             .transactionManager(transactions)
                             .readTransactionManager(readsIn(transactions))
                             .storeThreads(storeThreads)
                             .build());
    }

    /**
     * ringbus as Spring Boot builds it on a database, with an aggregate cache of the given size (per aggregate type):
     * told the connection pool's size and the database's round trip, which its default read-ahead threads follow.
     */
    public static RingCommandBus withCacheSizeOnPool(EventStore eventStore, TransactionManager transactions,
                                                     int cacheSize, int connectionPoolSize,
                                                     java.time.Duration databaseLatency) {
        return built(RingCommandBus.builder()
                             .eventStore(eventStore)
                             .transactionManager(transactions)
                             .readTransactionManager(readsIn(transactions))
                             .cacheSize(cacheSize)
                             .connectionPoolSize(connectionPoolSize)
                             .databaseLatency(databaseLatency)
                             .build());
    }

    /** ringbus as it comes but with an aggregate cache of the given size (per aggregate type). */
    public static RingCommandBus withCacheSize(EventStore eventStore, TransactionManager transactions,
                                               int cacheSize) {
        return built(RingCommandBus.builder()
                             .eventStore(eventStore)
                             .transactionManager(transactions)
                             .readTransactionManager(readsIn(transactions))
                             .cacheSize(cacheSize)
                             .build());
    }

    /**
     * ringbus as it comes but with an aggregate cache of the given size (per aggregate type) and the given number of
     * threads reading missing aggregates ahead of their commands.
     */
    public static RingCommandBus withCacheSize(EventStore eventStore, TransactionManager transactions,
                                               int cacheSize, int readAheadThreads) {
        return built(RingCommandBus.builder()
                             .eventStore(eventStore)
                             .transactionManager(transactions)
                             .readTransactionManager(readsIn(transactions))
                             .cacheSize(cacheSize)
                             .readAheadThreads(readAheadThreads)
                             .build());
    }

    /**
     * ringbus with two handler threads (so the {@code FULL} topology): the best settings found by tuning on 2 cores
     * before the {@code COMPACT} topology existed (docs/benchmarks.md); since then the defaults (one handler thread,
     * {@code COMPACT}) are faster on 2 cores. Kept to show the setting that spreads handling over cores on larger
     * machines.
     */
    public static RingCommandBus tuned(EventStore eventStore, TransactionManager transactions) {
        return built(RingCommandBus.builder()
                             .eventStore(eventStore)
                             .transactionManager(transactions)
                             .readTransactionManager(readsIn(transactions))
                             .handlerThreads(2)
                             .build());
    }

    /**
     * Where ringbus reads aggregates, as docs/postgres.md sets it up: on ringbus's {@link JdbcTransactionManager}, its
     * reads in auto-commit mode (no {@code COMMIT} per read); else the transaction manager itself.
     */
    private static TransactionManager readsIn(TransactionManager transactions) {
        return transactions instanceof JdbcTransactionManager jdbc ? jdbc.autoCommitReads() : transactions;
    }

    /**
     * A started ringbus with default settings outside any Axon {@code Configuration}, over an empty
     * in-memory event store.
     */
    public static StartedBus startStandalone() {
        RingCommandBus bus = withDefaults(
                RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build());
        bus.start();
        return new StartedBus(bus, bus::shutdown);
    }
}
