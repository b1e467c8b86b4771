package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.github.ringbus.jpa.PostgresJpaEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * The differential test's store on a real PostgreSQL (the behaviour package's {@code DifferentialTest}): one embedded
 * server for the whole test run, Axon's JDBC engine with Jackson, appends that refuse the payloads a program names
 * and can be held, a serializer that cannot read back the values a program names, and the tables emptied between
 * the two runs of a program. One program at a time.
 */
public final class DifferentialPostgres implements AutoCloseable {

    private final PostgresServer server;
    private final HikariDataSource pool;
    private final JdbcTransactionManager transactions;
    /** Latches the next appends wait on before they write, in the order they were asked for. */
    private final Queue<CountDownLatch> holds = new ConcurrentLinkedQueue<>();
    private final Queue<CountDownLatch> everHeld = new ConcurrentLinkedQueue<>();
    /** Hibernate on the JPA tables, started by the first JPA engine asked for; null before. Test thread only. */
    private HibernateOnPostgres jpa;
    private static final String JPA_SCHEMA = "differential_jpa";

    private DifferentialPostgres() {
        this.server = PostgresServer.startForTests();
        this.pool = server.pool(8);
        this.transactions = new JdbcTransactionManager(pool);
    }

    /** Starts a server with the event tables created. */
    public static DifferentialPostgres start() {
        return new DifferentialPostgres();
    }

    /** The transactions both buses run in (the ring's store and reads, the twin's Units of Work). */
    public JdbcTransactionManager transactions() {
        return transactions;
    }

    /** Reads without a transaction of their own, as docs/postgres.md sets the ring up. */
    public TransactionManager autoCommitReads() {
        return transactions.autoCommitReads();
    }

    /**
     * Empties the event tables and returns a new engine on them.
     *
     * @param refused    the payloads whose append fails, with an {@link IllegalArgumentException} (as a constraint
     *                   the bus does not know would)
     * @param unreadable the payloads the serializer writes but cannot read back
     */
    public EventStorageEngine freshEngine(Predicate<Object> refused, Predicate<Object> unreadable) {
        return freshEngine(refused, unreadable, false);
    }

    /**
     * As {@link #freshEngine(Predicate, Predicate)}; {@code copy}: the engine appends with
     * {@link io.github.ringbus.jdbc.PostgresCopyAppend} (one binary COPY) instead of Axon's own statement.
     */
    public EventStorageEngine freshEngine(Predicate<Object> refused, Predicate<Object> unreadable, boolean copy) {
        releaseAll();
        try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE DomainEventEntry, SnapshotEventEntry");
        } catch (SQLException e) {
            throw new IllegalStateException("Could not empty the event tables", e);
        }
        return engine(refused, unreadable, copy);
    }

    private EventStorageEngine engine(Predicate<Object> refused, Predicate<Object> unreadable, boolean copy) {
        return PostgresServer.engine(transactions, (connection, events) -> beforeAppend(events, refused),
                                     new RecordingSerializer(value -> false, type -> false, unreadable),
                                     copy ? io.github.ringbus.jdbc.PostgresCopyAppend.INSTANCE
                                             : org.axonframework.eventsourcing.eventstore.jdbc.statements
                                                       .JdbcEventStorageEngineStatements::appendEvents);
    }

    /**
     * Empties Axon's JPA tables (Hibernate mapping Axon's entities as Spring Boot does, Hibernate's default {@code oid}
     * payload columns, in a schema of their own) and returns a new JPA engine on them, with the same refusals, holds
     * and unreadable values as {@link #freshEngine(Predicate, Predicate, boolean)}.
     *
     * @param bulkAppend ringbus's {@link PostgresJpaEventStorageEngine} appending each batch in one statement; false:
     *                   Axon's own append, one entity at a time
     */
    public EventStorageEngine freshJpaEngine(Predicate<Object> refused, Predicate<Object> unreadable,
                                             boolean bulkAppend) {
        releaseAll();
        HibernateOnPostgres hibernate = jpa();
        try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
            statement.execute("TRUNCATE " + hibernate.eventTable() + ", " + JPA_SCHEMA + ".snapshot_event_entry");
        } catch (SQLException e) {
            throw new IllegalStateException("Could not empty the JPA event tables", e);
        }
        return new RefusingJpaEngine(PostgresJpaEventStorageEngine.builder()
                                                                  .bulkAppend(bulkAppend)
                                                                  .transactionManager(hibernate),
                                     hibernate, new RecordingSerializer(value -> false, type -> false, unreadable),
                                     events -> beforeAppend(events, refused));
    }

    /** The JPA transactions both buses run in with {@link #freshJpaEngine} (the ring's store and reads, the twin's). */
    public TransactionManager jpaTransactions() {
        return jpa();
    }

    private HibernateOnPostgres jpa() {
        if (jpa == null) {
            try {
                jpa = HibernateOnPostgres.start(pool, JPA_SCHEMA, HibernateOnPostgres.Columns.OID);
            } catch (Exception e) {
                throw new IllegalStateException("Hibernate did not start", e);
            }
        }
        return jpa;
    }

    /**
     * Axon's JPA engine (ringbus's, its bulk append on or off) whose appends are refused and held as the JDBC engine's
     * (an {@link IllegalArgumentException} before the statement, as a constraint the bus does not know).
     */
    private static final class RefusingJpaEngine extends PostgresJpaEventStorageEngine {

        private final java.util.function.Consumer<List<? extends EventMessage<?>>> beforeAppend;

        RefusingJpaEngine(PostgresJpaEventStorageEngine.Builder builder, HibernateOnPostgres hibernate,
                          RecordingSerializer serializer,
                          java.util.function.Consumer<List<? extends EventMessage<?>>> beforeAppend) {
            super((PostgresJpaEventStorageEngine.Builder) builder.entityManagerProvider(hibernate)
                                                                 .eventSerializer(serializer)
                                                                 .snapshotSerializer(serializer)
                                                                 .persistenceExceptionResolver(
                                                                         new SQLStateResolver("23505")));
            this.beforeAppend = beforeAppend;
        }

        @Override
        protected void appendEvents(List<? extends EventMessage<?>> events,
                                    org.axonframework.serialization.Serializer serializer) {
            // A refusal propagates as the JDBC engine's hook's does: the store's own exception, unwrapped.
            beforeAppend.accept(events);
            super.appendEvents(events, serializer);
        }
    }

    /**
     * Another engine on the tables {@link #freshEngine} emptied, as a second replica of the application has: the
     * same refused and unreadable payloads, and the same holds (the next held append is whichever engine's comes).
     */
    public EventStorageEngine engineOnTheSameTables(Predicate<Object> refused, Predicate<Object> unreadable,
                                                    boolean copy) {
        return engine(refused, unreadable, copy);
    }

    private void beforeAppend(List<? extends EventMessage<?>> events, Predicate<Object> refused) {
        CountDownLatch hold = holds.poll();
        if (hold != null) {
            try {
                if (!hold.await(20, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("a held append was never released");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        for (EventMessage<?> event : events) {
            if (refused.test(event.getPayload())) {
                throw new IllegalArgumentException("The store refuses " + event.getPayload());
            }
        }
    }

    /** Holds the next append until the returned action runs (then it goes on). */
    public Runnable holdNextAppend() {
        CountDownLatch hold = new CountDownLatch(1);
        holds.add(hold);
        everHeld.add(hold);
        return hold::countDown;
    }

    /** Lets every held append go, and forgets the holds not yet met. */
    public void releaseAll() {
        holds.clear();
        everHeld.forEach(CountDownLatch::countDown);
        everHeld.clear();
    }

    @Override
    public void close() {
        releaseAll();
        if (jpa != null) {
            jpa.close();
        }
        pool.close();
        server.close();
    }
}
