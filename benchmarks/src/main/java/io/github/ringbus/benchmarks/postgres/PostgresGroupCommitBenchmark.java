package io.github.ringbus.benchmarks.postgres;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import io.github.ringbus.benchmarks.BankApplication;
import io.github.ringbus.benchmarks.BusChoice;
import io.github.ringbus.benchmarks.DepositBatch;
import io.github.ringbus.benchmarks.EventStorage;
import io.github.ringbus.benchmarks.report.Summary;
import io.github.ringbus.benchmarks.report.Utilization;
import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandBus;
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
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Commands per second with a real PostgreSQL event store whose commits are durable ({@link DurablePostgres}:
 * {@code fsync=on}, {@code synchronous_commit=on}, checked before anything is measured). The same bank application
 * as {@code ThroughputBenchmark}, its events in Axon's {@code JdbcEventStorageEngine}:
 * <ul>
 *     <li>{@code simple} and {@code axon-disruptor-cached} run each command in a transaction of its own, as Axon's
 *     buses do: one {@code COMMIT}, and so one wait for a WAL flush, per command;</li>
 *     <li>{@code ringbus} appends the events of each batch of handled commands in one transaction (group
 *     commit) and completes those commands after that commit returns;</li>
 *     <li>{@code ringbus-copy} (by {@code -p bus=...} only) is ringbus whose engine appends each batch in one
 *     binary {@code COPY} ({@code PostgresCopyAppend}) instead of Axon's rewritten multi-row {@code INSERT}s.</li>
 * </ul>
 * The {@code store} parameter picks the engine: {@code jdbc} (the default, above), or Axon's
 * {@code JpaEventStorageEngine} on Hibernate as Spring Boot configures it ({@link JpaStorage}):
 * {@code jpa-boot-defaults} (large-object {@code oid} payload columns, no JDBC batching) or {@code jpa-bytea} (the
 * configuration docs/postgres.md recommends: {@code bytea}, JDBC batches of 64). The main job runs the JPA stores
 * with {@code simple} and {@code ringbus} as applications have them: SimpleCommandBus on Axon's JPA engine, ringbus on
 * the engine its Spring Boot auto-configuration gives it ({@code PostgresJpaEventStorageEngine}: each batch in one
 * statement); {@code ringbus-axon-jpa} is ringbus on Axon's own JPA engine ({@code ringbus.jpa-bulk-append=false}).
 * One operation is one {@code Deposit} dispatched. Each dispatching thread keeps at most
 * {@code inFlight / threads} commands awaiting their callback (a synchronous bus answers before {@code dispatch}
 * returns, so for {@code simple} this is one); each iteration ends by waiting for the commands still in flight,
 * outside the measured time: a rate overstated by at most {@code inFlight} commands per iteration. A failed
 * command fails the benchmark. After each iteration a line gives what the server did meanwhile: events stored,
 * transactions committed and WAL flushes, from PostgreSQL's statistics views.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
public class PostgresGroupCommitBenchmark {

    /** The {@code bus} parameter of ringbus on an engine that appends by binary COPY (not in the default run). */
    static final String COPYING = "ringbus-copy";
    /** The {@code bus} parameter of ringbus on Axon's own JPA engine (the JPA stores only). */
    static final String ON_AXONS_JPA = "ringbus-axon-jpa";

    /** The application on PostgreSQL, on the bus named by the {@code bus} parameter. */
    @State(Scope.Benchmark)
    public static class Bank {

        @Param({"simple", "axon-disruptor-cached", "ringbus"})
        public String bus;

        /**
         * Commands awaiting their callback, all dispatching threads together: by default half of ringbus's ring
         * (4,096 slots), so that dispatchers never wait for a free slot.
         */
        @Param({"2048"})
        public int inFlight;

        /**
         * The network's round trip between the application and the server, added by a {@link DelayProxy} in front of
         * it ({@code -p rttMicros=0,500,1000}); 0: loopback, the pool connects directly.
         */
        @Param({"0"})
        public long rttMicros;

        /**
         * Subscribing projections of the application ({@code -p projections=1}): Axon subscribing processors, which
         * ringbus calls inside each batch's transaction on its store thread, SimpleCommandBus inside each command's.
         */
        @Param({"0"})
        public int projections;

        /** The engine: {@code jdbc}, {@code jpa-boot-defaults} or {@code jpa-bytea} ({@link JpaStorage.Mapping}). */
        @Param({"jdbc"})
        public String store;

        private DurablePostgres postgres;
        /** The JPA engine's Hibernate, when {@code store} names one; else null. */
        private JpaStorage jpa;
        private String eventTable = "DomainEventEntry";
        private BankApplication application;
        private DurablePostgres.ServerCounters iterationStart;
        private double iterationSeconds;

        @Setup(Level.Trial)
        public void start() {
            // A connection for each of up to 64 dispatching threads (SimpleCommandBus commits on the caller's), and
            // for ringbus's store threads and reads.
            postgres = DurablePostgres.start(72, rttMicros);
            System.out.printf("%n[%s] %s%n", bus, postgres.describe());
            try {
                // ringbus-copy: ringbus, its engine appending each batch in one binary COPY (PostgresCopyAppend).
                boolean copy = bus.equals(COPYING);
                EventStorage storage;
                if (store.equals("jdbc")) {
                    storage = postgres.eventStorage(copy);
                } else {
                    // ringbus gets ringbus's JPA engine, as its Boot auto-configuration builds it; other buses Axon's.
                    boolean bulkAppend = bus.equals("ringbus");
                    JpaStorage.Mapping mapping = JpaStorage.Mapping.named(store);
                    if (mapping == null || copy) {
                        throw new IllegalArgumentException("store=" + store + " with bus=" + bus + ": the stores are "
                                                           + "jdbc, jpa-boot-defaults and jpa-bytea; " + COPYING
                                                           + " runs on jdbc only");
                    }
                    jpa = JpaStorage.start(postgres, mapping);
                    eventTable = JpaStorage.EVENT_TABLE;
                    System.out.printf("[%s] %s, %s: payload column %s%n", bus,
                                      bulkAppend ? "ringbus's JPA engine" : "Axon's JPA engine", store,
                                      jpa.payloadColumnType(postgres));
                    storage = jpa.eventStorage(bulkAppend);
                }
                application = BankApplication.start(BusChoice.named(copy || bus.equals(ON_AXONS_JPA) ? "ringbus" : bus),
                                                     storage, projections);
            } catch (RuntimeException e) {
                if (jpa != null) {
                    jpa.close();
                }
                postgres.close();
                throw e;
            }
        }

        @Setup(Level.Iteration)
        public void countFrom(IterationParams iteration) {
            iterationStart = postgres.counters(eventTable);
            iterationSeconds = iteration.getTime().convertTo(TimeUnit.NANOSECONDS) / 1e9;
            Utilization.iterationBegins();
        }

        @TearDown(Level.Iteration)
        public void reportIteration() {
            DurablePostgres.ServerCounters now = postgres.counters(eventTable);
            long events = now.events() - iterationStart.events();
            // What the server stored in the iteration, per second of its measured time: at least the score (the
            // commands still in flight at its end, and those sent while JMH started and stopped its threads, are
            // stored too); below it, the score counted commands that were never stored. The report checks.
            Utilization.alsoReport(Summary.SERVER_ROWS, events / iterationSeconds);
            Utilization.iterationEnds();
            long commits = now.commits() - iterationStart.commits();
            long flushes = now.walSyncs() - iterationStart.walSyncs();
            System.out.printf("  [%s] server: %,d events stored, %,d commits (%.1f events per commit), "
                              + "%,d WAL flushes (%.1f events per flush)%n",
                              bus, events, commits, perOrZero(events, commits), flushes, perOrZero(events, flushes));
        }

        @TearDown(Level.Trial)
        public void shutdown() {
            try {
                application.shutdown();
            } finally {
                if (jpa != null) {
                    jpa.close();
                }
                postgres.close();
            }
        }

        CommandBus commandBus() {
            return application.commandBus();
        }

        private static double perOrZero(long count, long per) {
            return per == 0 ? 0 : (double) count / per;
        }
    }

    /**
     * One dispatching thread: the deposits of a {@link DepositBatch} (one per account, in an order shuffled per
     * thread), sent round and round, with at most its share of {@code inFlight} commands awaiting their callback.
     */
    @State(Scope.Thread)
    public static class Dispatcher {

        private DepositBatch deposits;
        private InFlightWindow window;
        private long next;

        @Setup(Level.Trial)
        public void prepare(Bank bank, ThreadParams threadParams) {
            deposits = new DepositBatch(threadParams.getThreadIndex());
            window = new InFlightWindow(bank.inFlight / threadParams.getThreadCount());
        }

        void dispatchNext(CommandBus bus) {
            window.dispatch(bus, asCommandMessage(deposits.deposit(next++)));
        }

        /** Waits for the commands still in flight, so that iterations do not overlap. */
        @TearDown(Level.Iteration)
        public void drain() throws InterruptedException {
            window.drain();
        }
    }

    @Benchmark
    @Threads(1)
    public void oneDispatcher(Bank bank, Dispatcher dispatcher) {
        dispatcher.dispatchNext(bank.commandBus());
    }

    @Benchmark
    @Threads(8)
    public void eightDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.dispatchNext(bank.commandBus());
    }

    /** A web server's request threads: 64 dispatchers, each with a connection of its own for SimpleCommandBus. */
    @Benchmark
    @Threads(64)
    public void sixtyFourDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.dispatchNext(bank.commandBus());
    }
}
