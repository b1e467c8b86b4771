package io.github.ringbus.benchmarks.postgres;

import io.github.ringbus.benchmarks.report.Utilization;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.benchmarks.Account;
import io.github.ringbus.AnnotatedTargetResolver;
import io.github.ringbus.benchmarks.EventStorage;
import io.github.ringbus.benchmarks.RingBusFactory;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.common.caching.EhCache3Adapter;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.updates.configuration.CommandLineUsagePropertyProvider;
import org.ehcache.CacheManager;
import org.ehcache.config.builders.CacheConfigurationBuilder;
import org.ehcache.config.builders.CacheManagerBuilder;
import org.ehcache.config.builders.ResourcePoolsBuilder;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Aggregates missing from the cache, like for like: {@value #ACCOUNTS_DEFAULT} accounts stored beforehand, every
 * deposit to an account drawn uniformly at random, and both buses given a cache of a tenth of the accounts:
 * {@code simple-cold} is Axon's {@link SimpleCommandBus} with Axon's {@link EhCache3Adapter} over an Ehcache heap of that
 * many entries (what an Axon user configures), {@code ringbus-cold} is ringbus as it comes with {@code cacheSize} set
 * to it. So about nine commands in ten find their aggregate missing and it is read from PostgreSQL first: on the
 * caller's thread for SimpleCommandBus, by ringbus's preload stage and read-ahead threads. With
 * {@code -p rttMicros=500} the reads and commits cross a {@link DelayProxy} (a database 0.5 ms away).
 *
 * <p>The accounts are stored through Axon's JDBC engine directly (their {@code AccountOpened} events, in transactions of
 * 5,000), not through the bus under test: opening 100,000 accounts one command at a time across a network would
 * take SimpleCommandBus minutes. One operation is one deposit dispatched; each dispatching thread keeps at most its
 * share of {@code inFlight} commands awaiting their callback (one for SimpleCommandBus, which answers before
 * {@code dispatch} returns). After each iteration a line says how many accounts were read from the store.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
public class PostgresColdCacheBenchmark {

    static final int ACCOUNTS_DEFAULT = 100_000;
    /** The connection pool's size: room for 64 callers of SimpleCommandBus, and the reads and commits of ringbus. */
    static final int POOL_SIZE = 72;

    /** The application on PostgreSQL with every account stored, on the bus named by {@code bus}. */
    @State(Scope.Benchmark)
    public static class Bank {

        @Param({"simple-cold", "ringbus-cold"})
        public String bus;

        /** Accounts stored beforehand; deposits go to them uniformly at random. */
        @Param({"100000"})
        public int accounts;

        /** The network's round trip between the application and the server; 0: loopback. */
        @Param({"0"})
        public long rttMicros;

        /**
         * ringbus's read-ahead threads; -1: its default, told the pool's size and round trip as Spring Boot tells it
         * (so more read-ahead threads where the round trip is long).
         */
        @Param({"-1"})
        public int readAheadThreads;

        /** Aggregates each bus keeps in memory; -1: a tenth of the accounts. */
        @Param({"-1"})
        public int cacheSize;

        /** Events of each account stored beforehand: its AccountOpened, then deposits. */
        @Param({"1"})
        public int history;

        /**
         * Both buses snapshot an account once this many events were read or applied since its last snapshot (Axon's
         * {@code EventCountSnapshotTriggerDefinition} on the aggregate, which ringbus honours); 0: no snapshots.
         */
        @Param({"0"})
        public int snapshotThreshold;

        /** Commands awaiting their callback, all dispatching threads together (half of ringbus's ring). */
        @Param({"2048"})
        public int inFlight;

        private DurablePostgres postgres;
        private Configuration configuration;
        private CacheManager ehcache;
        private long readsAtIterationStart;
        private long commandsAtIterationStart;
        final java.util.concurrent.atomic.LongAdder commands = new java.util.concurrent.atomic.LongAdder();

        @Setup(Level.Trial)
        public void start() {
            System.setProperty(CommandLineUsagePropertyProvider.DISABLED_KEY, "true");
            postgres = DurablePostgres.start(POOL_SIZE, rttMicros);
            System.out.printf("%n[%s] %s%n", bus, postgres.describe());
            java.time.Duration roundTrip = postgres.poolRoundTrip();
            EventStorage storage = postgres.eventStorage();
            EventStorageEngine engine = storage.engine().get();
            storeAccounts(engine, storage);
            int cacheSize = this.cacheSize < 0 ? accounts / 10 : this.cacheSize;
            AggregateConfigurer<Account> account = AggregateConfigurer.defaultConfiguration(Account.class);
            if (snapshotThreshold > 0) {
                account.configureSnapshotTrigger(c -> new EventCountSnapshotTriggerDefinition(c.snapshotter(),
                                                                                              snapshotThreshold));
            }
            boolean ringbus = bus.startsWith("ringbus");
            if (bus.equals("simple-cold")) {
                ehcache = CacheManagerBuilder.newCacheManagerBuilder().build(true);
                org.ehcache.Cache<Object, Object> cache = ehcache.createCache(
                        "accounts", CacheConfigurationBuilder.newCacheConfigurationBuilder(
                                Object.class, Object.class, ResourcePoolsBuilder.heap(cacheSize)).build());
                account.configureCache(c -> new EhCache3Adapter((org.ehcache.core.Ehcache<Object, Object>) cache));
            } else if (!bus.equals("ringbus-cold")) {
                throw new IllegalArgumentException("No bus named '" + bus + "' here: simple-cold or ringbus-cold");
            }
            configuration = DefaultConfigurer
                    .defaultConfiguration()
                    .registerComponent(CommandTargetResolver.class, c -> new AnnotatedTargetResolver())
                    .configureTransactionManager(c -> storage.transactions())
                    .configureEventStore(c -> {
                        EmbeddedEventStore store = ringbus ? RingEventStore.builder().storageEngine(engine).build()
                                                           : EmbeddedEventStore.builder().storageEngine(engine).build();
                        c.onShutdown(store::shutDown);
                        return store;
                    })
                    .configureAggregate(account)
                    .configureCommandBus(c -> ringbus
                            ? (readAheadThreads < 0
                               ? RingBusFactory.withCacheSizeOnPool(c.eventStore(), storage.transactions(), cacheSize,
                                                                    POOL_SIZE, roundTrip)
                               : RingBusFactory.withCacheSize(c.eventStore(), storage.transactions(), cacheSize,
                                                              readAheadThreads))
                            : SimpleCommandBus.builder().transactionManager(storage.transactions()).build())
                    .start();
            if (configuration.commandBus() instanceof RingCommandBus ring) {
                System.out.printf("  [%s] %d read-ahead threads (pool of %d, round trip %d us)%n", bus,
                                  ring.readAheadThreads(), POOL_SIZE, roundTrip.toNanos() / 1_000);
            }
        }

        /** Stores every account's history (AccountOpened, then deposits) through the engine, ~5,000 events a commit. */
        private void storeAccounts(EventStorageEngine engine, EventStorage storage) {
            int perTransaction = Math.max(1, 5_000 / history);
            for (int from = 0; from < accounts; from += perTransaction) {
                List<DomainEventMessage<?>> opened = new ArrayList<>();
                for (int i = from; i < Math.min(accounts, from + perTransaction); i++) {
                    String id = accountId(i);
                    opened.add(new GenericDomainEventMessage<>("Account", id, 0, new Account.AccountOpened(id)));
                    for (int sequence = 1; sequence < history; sequence++) {
                        opened.add(new GenericDomainEventMessage<>("Account", id, sequence,
                                                                   new Account.Deposited(id, 1)));
                    }
                }
                Transaction transaction = storage.transactions().startTransaction();
                engine.appendEvents(opened);
                transaction.commit();
            }
        }

        @Setup(Level.Iteration)
        public void countFrom() {
            readsAtIterationStart = Account.historiesStartedSoFar();
            commandsAtIterationStart = commands.sum();
            Utilization.iterationBegins();
        }

        @TearDown(Level.Iteration)
        public void reportIteration() {
            Utilization.iterationEnds();
            long reads = Account.historiesStartedSoFar() - readsAtIterationStart;
            long sent = commands.sum() - commandsAtIterationStart;
            System.out.printf("  [%s] %,d commands, %,d accounts read from the store (%.0f%%)%n",
                              bus, sent, reads, sent == 0 ? 0 : 100.0 * reads / sent);
        }

        @TearDown(Level.Trial)
        public void shutdown() {
            try {
                configuration.shutdown();
                if (ehcache != null) {
                    ehcache.close();
                }
            } finally {
                postgres.close();
            }
        }

        static String accountId(int index) {
            return "cold-" + index;
        }
    }

    /** One dispatching thread: deposits to accounts drawn uniformly at random, its share of inFlight at most. */
    @State(Scope.Thread)
    public static class Dispatcher {

        private SplittableRandom random;
        private InFlightWindow window;
        private int accounts;

        @Setup(Level.Trial)
        public void prepare(Bank bank, ThreadParams threadParams) {
            random = new SplittableRandom(threadParams.getThreadIndex());
            window = new InFlightWindow(bank.inFlight / threadParams.getThreadCount());
            accounts = bank.accounts;
        }

        void dispatchNext(Bank bank) {
            Account.Deposit deposit = new Account.Deposit(Bank.accountId(random.nextInt(accounts)), 1);
            bank.commands.increment();
            window.dispatch(bank.configuration.commandBus(), asCommandMessage(deposit));
        }

        @TearDown(Level.Iteration)
        public void drain() throws InterruptedException {
            window.drain();
        }
    }

    @Benchmark
    @Threads(1)
    public void oneDispatcher(Bank bank, Dispatcher dispatcher) {
        dispatcher.dispatchNext(bank);
    }

    @Benchmark
    @Threads(8)
    public void eightDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.dispatchNext(bank);
    }

    @Benchmark
    @Threads(64)
    public void sixtyFourDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.dispatchNext(bank);
    }
}
