package io.github.ringbus;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStore;

import java.time.Duration;

/**
 * The default of every value setting of {@link RingCommandBus.Builder}: the one place each is written. The Spring
 * module applies only the properties a user set, so its defaults are these; the copies a user reads (the Spring
 * configuration metadata an IDE shows, the README's and docs/spring-boot.md's tables) are compared with these by
 * {@code DefaultsTest}. The defaults that depend on the machine are computed by the builder: handler threads (a
 * quarter of the cores, at least one), store threads (see {@link #storeThreads}), read-ahead threads (see
 * {@link #readAheadThreads}) and topology (compact on up to 4 cores with one handler thread and one store thread).
 */
final class Defaults {

    static final int RING_SIZE = 4096;
    static final WaitStrategyChoice WAIT_STRATEGY = WaitStrategyChoice.ADAPTIVE;
    static final FullRingPolicy FULL_RING_POLICY = FullRingPolicy.BLOCK;
    static final Duration FULL_RING_TIMEOUT = Duration.ofSeconds(1);
    static final PublishMode PUBLISH_MODE = PublishMode.IN_TRANSACTION;
    static final int CACHE_SIZE = 100_000;
    static final int MAX_STORE_BATCH_EVENTS = 1024;
    static final Duration SHUTDOWN_TIMEOUT = Duration.ofSeconds(30);
    static final String THREAD_NAME_PREFIX = "ringbus";
    /** Topology {@link Topology#COMPACT} is chosen on machines of at most this many cores (with one handler thread). */
    static final int COMPACT_UP_TO_CORES = 4;

    private Defaults() {
    }

    /**
     * Threads reading aggregates missing from the cache ahead of their commands: four per core, at least 16 and at
     * most 64; more where the database is far enough away that reading as fast as this machine handles commands takes
     * more reads at once (see {@link #readsInFlight}); and at most half the connection pool when its size is known
     * (each read holds a connection while it runs; the other half is left to the store threads and the application).
     * Reads wait on the database (a round trip or more each), so many more of them than cores pay off: with a
     * database 0.5 ms away and a cache of a tenth of 100,000 aggregates, 16 reads at once did 1.4-1.7x what 4 did on 2
     * cores (and no worse on loopback), and 64 did 12x what 4 did on 16 cores, past SimpleCommandBus with 64 callers;
     * on 2 cores 1 ms away 8 did 0.6x what 16 did, and 32 or 64 no better than 16 (docs/benchmarks.md, "A database
     * across the network" and "Reads ahead by the round trip"). The threads run only while aggregates are missing.
     *
     * @param connectionPoolSize the connection pool's size, or 0 when not known
     * @param databaseLatency    the round trip to the database, or null when not known
     * @param cores              the machine's cores
     * @return the default number of read-ahead threads
     */
    static int readAheadThreads(int connectionPoolSize, Duration databaseLatency, int cores) {
        int byCores = Math.min(64, Math.max(16, 4 * cores));
        int wanted = Math.min(64, Math.max(byCores, readsInFlight(databaseLatency, cores)));
        return connectionPoolSize > 0 ? Math.max(1, Math.min(wanted, connectionPoolSize / 2)) : wanted;
    }

    /** As {@link #readAheadThreads(int, Duration, int)} on this machine, the database's round trip not known. */
    static int readAheadThreads(int connectionPoolSize) {
        return readAheadThreads(connectionPoolSize, null, Runtime.getRuntime().availableProcessors());
    }

    /** Reads of missing aggregates one core keeps up with: 2 cores on loopback did ~7,900 commands/s, 9 in 10 reads. */
    static final int READS_PER_SECOND_PER_CORE = 4_000;
    /** Round trips of one read of a missing aggregate: 3 in a transaction (begin and first query, events, commit). */
    static final int ROUND_TRIPS_PER_READ = 3;
    /** A read's time on the server beside its round trips (snapshot look-up and events of a small aggregate). */
    static final Duration READ_ON_SERVER = Duration.ofMillis(1).dividedBy(4);

    /**
     * Little's law: the reads in flight that keep up with {@link #READS_PER_SECOND_PER_CORE} per core when each takes
     * {@link #ROUND_TRIPS_PER_READ} round trips of {@code databaseLatency} and {@link #READ_ON_SERVER}. On 2 cores: 6
     * on loopback (0.15 ms), 14 at 0.5 ms, 26 at 1 ms, 50 at 2 ms; on 16 cores 45 on loopback, past the cap of 64
     * from 0.5 ms on. It only ever raises the default by cores.
     *
     * @return the reads in flight wanted; 0 when the latency is not known
     */
    static int readsInFlight(Duration databaseLatency, int cores) {
        if (databaseLatency == null) {
            return 0;
        }
        double seconds = (ROUND_TRIPS_PER_READ * databaseLatency.toNanos() + READ_ON_SERVER.toNanos()) / 1e9;
        return (int) Math.min(Integer.MAX_VALUE, Math.ceil(READS_PER_SECOND_PER_CORE * (double) cores * seconds));
    }

    /** The round trip from which a database is far away: below it, a small pool is never worth a line in the log. */
    static final Duration FAR_DATABASE = Duration.ofMillis(1);

    /**
     * The line the log gets when the connection pool holds the read-ahead threads well below what the database's round
     * trip asks for: a database far away (at least {@link #FAR_DATABASE}) and less than half the reads it would keep
     * up with. Near its database, a small pool (Spring Boot's default of 10) costs nothing worth a line, and a round
     * trip just under the wanted count neither. It names the settings as a Spring Boot user and a builder user set them.
     *
     * @param chosen             the read-ahead threads chosen
     * @param connectionPoolSize the pool's size, or 0 when not known
     * @param databaseLatency    the database's round trip, or null when not known
     * @param cores              the machine's cores
     * @return the line, or null for none
     */
    static String readAheadAdvice(int chosen, int connectionPoolSize, Duration databaseLatency, int cores) {
        if (connectionPoolSize <= 0 || databaseLatency == null || databaseLatency.compareTo(FAR_DATABASE) < 0) {
            return null;
        }
        int wanted = Math.min(64, readsInFlight(databaseLatency, cores));
        if (chosen * 2 >= wanted) {
            return null;
        }
        return String.format("ringbus reads at most %d aggregates missing from its cache at once, half the connection "
                                     + "pool of %d; with the database %d us away, %d would keep up with %d cores: raise "
                                     + "the pool's size (spring.datasource.hikari.maximum-pool-size with Spring Boot's "
                                     + "default pool), or set ringbus.read-ahead-threads (readAheadThreads on the "
                                     + "builder)", chosen, connectionPoolSize, databaseLatency.toNanos() / 1_000, wanted,
                             cores);
    }

    /** One handler thread per four cores, at least one: the other stages need cores too. */
    static int handlerThreads() {
        return Math.max(1, Runtime.getRuntime().availableProcessors() / 4);
    }

    /**
     * Store threads where the engine can take appends side by side (a database, behind a transaction manager that
     * gives each thread its own transaction): one per two cores from 8 cores on, one per four cores below (so one up
     * to 7 cores), at most half the connection pool when its size is known (the read-ahead threads take the other
     * half) and at most 64. One where the engine cannot: without a transaction manager (each thread's appends would
     * not be its own transaction) or on Axon's in-memory engine, which appends under one lock, so that more threads
     * would only wait for each other.
     * <p>
     * Measured (docs/benchmarks.md, "The whole machine"): each store thread commits on one connection, and one
     * connection's server backend is busy most of the time it is in the store; on 16 cores eight store threads stored
     * 1.46x and 1.49x what four did at 8 and 64 dispatchers (sixteen: 1.53x and 1.34x). On 2 cores a second one fills
     * the idle cores but stores no more (the two backends share them).
     *
     * @param eventStore         the bus's event store
     * @param transactionManager the bus's transaction manager
     * @param cores              the machine's cores
     * @param connectionPoolSize the connection pool's size, or 0 when not known
     * @return the default number of store threads
     */
    static int storeThreads(EventStore eventStore, TransactionManager transactionManager, int cores,
                            int connectionPoolSize) {
        if (transactionManager instanceof NoTransactionManager
                || (eventStore instanceof RingEventStore ringEventStore && ringEventStore.appendsUnderOneLock())) {
            return 1;
        }
        int byCores = Math.min(64, cores >= 8 ? cores / 2 : Math.max(1, cores / 4));
        return connectionPoolSize > 0 ? Math.max(1, Math.min(byCores, connectionPoolSize / 2)) : byCores;
    }

    /** {@link Topology#COMPACT} on small machines with one handler thread (measured faster on 2 cores). */
    static Topology topology(int handlerThreads, int storeThreads) {
        return handlerThreads == 1 && storeThreads == 1 && Runtime.getRuntime().availableProcessors() <= COMPACT_UP_TO_CORES
                ? Topology.COMPACT : Topology.FULL;
    }
}
