package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.bus.WaitStrategyChoice;
import io.github.ringbus.events.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.github.ringbus.stages.PipelineMonitor;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.common.Registration;
import org.axonframework.common.caching.Cache;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Commands per second on PostgreSQL with durable commits ({@code fsync=on}, {@code synchronous_commit=on}): Axon's
 * {@link SimpleCommandBus} with an {@link EventSourcingRepository} (one transaction and one commit per command) against
 * ringbus with group commit, same workload, same server, same run. Not part of the build: run it with
 * <pre>
 * ./mvnw test -Dtest=PostgresThroughputComparisonTest -Dringbus.pgbench=true
 *     [-Dringbus.pgbench.threads=8] [-Dringbus.pgbench.seconds=10] [-Dringbus.pgbench.accounts=1000]
 *     [-Dringbus.pgbench.wait=SLEEPING|BLOCKING|YIELDING|BUSY_SPIN] [-Dringbus.pgbench.inflight=256]
 * </pre>
 * It refuses to run unless the server reports {@code fsync} and {@code synchronous_commit} on, and prints both
 * rates, their ratio and the batch sizes ringbus committed. Both buses keep every aggregate in memory (ringbus in its
 * own cache, the SimpleCommandBus's repository in a map cache), so the comparison is about commits, not replays.
 */
@EnabledIfSystemProperty(named = "ringbus.pgbench", matches = "true")
class PostgresThroughputComparisonTest {

    private static final int THREADS = Integer.getInteger("ringbus.pgbench.threads", 8);
    private static final int SECONDS = Integer.getInteger("ringbus.pgbench.seconds", 10);
    private static final int WARMUP_SECONDS = Integer.getInteger("ringbus.pgbench.warmup", 3);
    private static final int ACCOUNTS = Integer.getInteger("ringbus.pgbench.accounts", 1000);
    /**
     * Commands each ringbus dispatcher keeps awaiting their callback. Default: together half the ring (4096 slots),
     * so that dispatchers do not block in the ring's {@code next()}: Disruptor 4's multi-producer {@code next()}
     * advances the cursor before it waits for a free slot, and the preload stage then busy-spins on the claimed but
     * unpublished slot, taking a core from the store stage and the database (seen with JFR on 2 cores). Set it to
     * 1024 or more to measure the bus with a full ring.
     */
    private static final int IN_FLIGHT = Integer.getInteger("ringbus.pgbench.inflight", 4096 / 2 / THREADS);
    /** How ringbus's stage threads wait; the bus's default unless told otherwise. */
    private static final WaitStrategyChoice WAIT = WaitStrategyChoice.valueOf(
            System.getProperty("ringbus.pgbench.wait", "SLEEPING"));

    @Test
    void ringbusGroupCommitAgainstSimpleCommandBusWithDurableCommits() throws Exception {
        try (PostgresServer server = PostgresServer.start(Map.of("fsync", "on", "synchronous_commit", "on"))) {
            String fsync = server.show("fsync");
            String synchronousCommit = server.show("synchronous_commit");
            if (!"on".equals(fsync) || !"on".equals(synchronousCommit)) {
                throw new IllegalStateException("Refusing to measure: the server reports fsync=" + fsync
                                                        + ", synchronous_commit=" + synchronousCommit);
            }
            System.out.printf("PostgreSQL %s, fsync=%s, synchronous_commit=%s; %d dispatching threads, %d accounts, "
                                      + "%d s warm-up + %d s measured per bus, %d cores, ringbus wait strategy %s%n",
                              server.show("server_version"), fsync, synchronousCommit, THREADS, ACCOUNTS,
                              WARMUP_SECONDS, SECONDS, Runtime.getRuntime().availableProcessors(), WAIT);
            System.out.printf("ringbus: at most %d commands awaiting their callback per dispatching thread%n", IN_FLIGHT);

            String loadBefore = loadAverage();
            double simple = measureSimpleCommandBus(server);
            BatchStats batches = new BatchStats();
            double ring = measureRingbus(server, batches);

            System.out.printf("SimpleCommandBus (commit per command): %,.0f commands/s%n", simple);
            System.out.printf("ringbus (group commit):                %,.0f commands/s%n", ring);
            System.out.printf("ratio ringbus / SimpleCommandBus:      %.1f x%n", ring / simple);
            System.out.printf("ringbus batches during measurement: %d commits, %.1f commands per commit on average, "
                                      + "largest %d%n", batches.commits, batches.average(), batches.largest);
            System.out.printf("load average before / after: %s / %s (numbers measured beside other work say "
                                      + "little)%n", loadBefore, loadAverage());
            assertThat(simple).isPositive();
            assertThat(ring).isPositive();
        }
    }

    private double measureSimpleCommandBus(PostgresServer server) throws Exception {
        try (HikariDataSource pool = server.pool(THREADS + 2)) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            EmbeddedEventStore eventStore = EmbeddedEventStore.builder()
                                                              .storageEngine(PostgresServer.engine(transactions))
                                                              .build();
            SimpleCommandBus bus = SimpleCommandBus.builder().transactionManager(transactions).build();
            EventSourcingRepository<Account> repository = EventSourcingRepository.builder(Account.class)
                                                                                 .eventStore(eventStore)
                                                                                 .cache(new MapCache())
                                                                                 .build();
            AggregateAnnotationCommandHandler.<Account>builder()
                                             .aggregateType(Account.class)
                                             .repository(repository)
                                             .build()
                                             .subscribe(bus);
            try {
                return measure(bus, "simple-", Integer.MAX_VALUE);
            } finally {
                eventStore.shutDown();
            }
        }
    }

    private double measureRingbus(PostgresServer server, BatchStats batches) throws Exception {
        try (HikariDataSource pool = server.pool(4)) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            RingEventStore eventStore = RingEventStore.builder()
                                                      .storageEngine(PostgresServer.engine(transactions))
                                                      .build();
            RingCommandBus bus = RingCommandBus.builder()
                                               .eventStore(eventStore)
                                               .transactionManager(transactions)
                                               .pipelineMonitor(batches)
                                               .waitStrategy(WAIT)
                                               .build();
            bus.registerAggregate(Account.class);
            bus.start();
            try {
                return measure(bus, "ring-", IN_FLIGHT);
            } finally {
                bus.shutdown();
                eventStore.shutDown();
            }
        }
    }

    /**
     * Opens the accounts, then has {@link #THREADS} threads send deposits for the warm-up and the measured time, each
     * with at most {@code inFlightPerThread} commands awaiting their callback (a synchronous bus answers before
     * {@code dispatch} returns).
     *
     * @return completed commands per second during the measured time
     */
    private double measure(CommandBus bus, String prefix, int inFlightPerThread) throws Exception {
        run(bus, THREADS, inFlightPerThread, i -> i < ACCOUNTS ? new Open(prefix + i) : null, () -> false);

        AtomicLong completed = new AtomicLong();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicLong failures = new AtomicLong();
        java.util.concurrent.atomic.AtomicReference<Throwable> firstFailure =
                new java.util.concurrent.atomic.AtomicReference<>();
        List<Thread> threads = new ArrayList<>();
        for (int t = 0; t < THREADS; t++) {
            int thread = t;
            threads.add(new Thread(() -> {
                Semaphore inFlight = new Semaphore(Math.min(inFlightPerThread, 1 << 20));
                long i = thread;
                while (!stop.get()) {
                    inFlight.acquireUninterruptibly();
                    bus.dispatch(asCommandMessage(new Deposit(prefix + (i % ACCOUNTS), 1)), (c, r) -> {
                        if (r.isExceptional()) {
                            failures.incrementAndGet();
                            firstFailure.compareAndSet(null, r.exceptionResult());
                        } else {
                            completed.incrementAndGet();
                        }
                        inFlight.release();
                    });
                    i += THREADS;
                }
            }));
        }
        threads.forEach(Thread::start);
        Thread.sleep(TimeUnit.SECONDS.toMillis(WARMUP_SECONDS));
        long before = completed.get();
        long start = System.nanoTime();
        if (measuring != null) {
            measuring.set(true);
        }
        Thread.sleep(TimeUnit.SECONDS.toMillis(SECONDS));
        long after = completed.get();
        long elapsed = System.nanoTime() - start;
        if (measuring != null) {
            measuring.set(false);
        }
        stop.set(true);
        for (Thread thread : threads) {
            thread.join();
        }
        if (failures.get() != 0) {
            throw new AssertionError(failures.get() + " commands failed, the first with: " + firstFailure.get(),
                                     firstFailure.get());
        }
        return (after - before) * 1e9 / elapsed;
    }

    private static String loadAverage() {
        try {
            return java.nio.file.Files.readString(java.nio.file.Path.of("/proc/loadavg")).trim();
        } catch (java.io.IOException | RuntimeException e) {
            return "unknown";
        }
    }

    /** Set while the measured window runs, so that batch statistics cover only it. */
    private static volatile AtomicBoolean measuring;

    private static void run(CommandBus bus, int threads, int inFlightPerThread,
                            java.util.function.LongFunction<Object> commands, Supplier<Boolean> stop)
            throws InterruptedException {
        List<Thread> workers = new ArrayList<>();
        AtomicLong failures = new AtomicLong();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            workers.add(new Thread(() -> {
                Semaphore inFlight = new Semaphore(Math.min(inFlightPerThread, 1 << 20));
                for (long i = thread; ; i += threads) {
                    Object command = commands.apply(i);
                    if (command == null || stop.get()) {
                        break;
                    }
                    inFlight.acquireUninterruptibly();
                    bus.dispatch(asCommandMessage(command), (c, r) -> {
                        if (r.isExceptional()) {
                            failures.incrementAndGet();
                        }
                        inFlight.release();
                    });
                }
                inFlight.acquireUninterruptibly(Math.min(inFlightPerThread, 1 << 20));
            }));
        }
        workers.forEach(Thread::start);
        for (Thread worker : workers) {
            worker.join();
        }
        assertThat(failures).as("failed commands").hasValue(0);
    }

    /** Batch sizes the ringbus store stage committed while measuring. */
    private static final class BatchStats implements PipelineMonitor {

        private final AtomicBoolean active = new AtomicBoolean();
        volatile long commits;
        volatile long commands;
        volatile int largest;

        BatchStats() {
            measuring = active;
        }

        @Override
        public void appended(int commandCount, int events) {
            // Called on the store stage's thread only.
            if (active.get()) {
                commits++;
                commands += commandCount;
                largest = Math.max(largest, commandCount);
            }
        }

        double average() {
            return commits == 0 ? 0 : (double) commands / commits;
        }
    }

    /** Axon's {@link Cache} on a map: keeps every aggregate, as ringbus's own cache does in this workload. */
    private static final class MapCache implements Cache {

        private final Map<Object, Object> entries = new ConcurrentHashMap<>();
        private final ConcurrentLinkedQueue<EntryListener> listeners = new ConcurrentLinkedQueue<>();

        @Override
        @SuppressWarnings("unchecked")
        public <K, V> V get(K key) {
            return (V) entries.get(key);
        }

        @Override
        public void put(Object key, Object value) {
            entries.put(key, value);
        }

        @Override
        public boolean putIfAbsent(Object key, Object value) {
            return entries.putIfAbsent(key, value) == null;
        }

        @Override
        public boolean remove(Object key) {
            return entries.remove(key) != null;
        }

        @Override
        public void removeAll() {
            entries.clear();
        }

        @Override
        public boolean containsKey(Object key) {
            return entries.containsKey(key);
        }

        @Override
        @SuppressWarnings("unchecked")
        public <V> void computeIfPresent(Object key, java.util.function.UnaryOperator<V> update) {
            entries.computeIfPresent(key, (k, v) -> update.apply((V) v));
        }

        @Override
        public Registration registerCacheEntryListener(EntryListener cacheEntryListener) {
            listeners.add(cacheEntryListener);
            return () -> listeners.remove(cacheEntryListener);
        }
    }
}
