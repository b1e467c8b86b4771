package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.github.ringbus.jdbc.PostgresCopyAppend;
import org.axonframework.common.jdbc.PersistenceExceptionResolver;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.AppendEventsStatementBuilder;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.JdbcEventStorageEngineStatements;
import org.axonframework.messaging.MetaData;
import org.axonframework.modelling.command.ConcurrencyException;
import org.axonframework.serialization.Revision;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link PostgresCopyAppend} on a real PostgreSQL with Axon's JDBC engine and its PostgreSQL schema: the rows one
 * binary COPY writes are those of Axon's own append, column for column, and Axon's engine reads them back as it reads
 * its own (by aggregate, and in order of the global index, as a tracking processor does); a duplicate key fails the
 * whole copy as Axon's own append fails (a {@code ConcurrencyException}); an engine whose data type the copy does not
 * write appends with Axon's statement. A trigger records each statement that inserts into the table, so that each
 * test knows which statement wrote.
 */
class PostgresCopyAppendTest extends OnPostgres {

    private static final String FIELDS = "eventIdentifier, aggregateIdentifier, sequenceNumber, type, timeStamp, "
            + "payloadType, payloadRevision, payload, metaData";
    private static final Instant AT = Instant.parse("2026-11-29T14:30:00.123456789Z");

    /** A payload with a revision, which Axon writes in its own column. */
    @Revision("7")
    record Renamed(String id, String name) {
    }

    private final List<AutoCloseable> closing = new ArrayList<>();
    private JdbcTransactionManager transactions;

    @BeforeEach
    void recordTheInsertingStatements() throws SQLException {
        var pool = server.pool(2);
        closing.add(pool);
        transactions = new JdbcTransactionManager(pool);
        try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
            statement.execute("TRUNCATE DomainEventEntry");
            statement.execute("CREATE TABLE IF NOT EXISTS inserted_by (statement text)");
            statement.execute("TRUNCATE inserted_by");
            statement.execute("CREATE OR REPLACE FUNCTION record_statement() RETURNS trigger AS $$ BEGIN "
                                      + "INSERT INTO inserted_by VALUES (split_part(current_query(), ' ', 1)); "
                                      + "RETURN NULL; END $$ LANGUAGE plpgsql");
            statement.execute("DROP TRIGGER IF EXISTS record_statement ON DomainEventEntry");
            statement.execute("CREATE TRIGGER record_statement AFTER INSERT ON DomainEventEntry "
                                      + "FOR EACH STATEMENT EXECUTE FUNCTION record_statement()");
        }
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable closeable : closing) {
            closeable.close();
        }
        try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
            statement.execute("DROP TRIGGER IF EXISTS record_statement ON DomainEventEntry");
        }
    }

    private JdbcEventStorageEngine engine(AppendEventsStatementBuilder append) {
        return engine(append, byte[].class);
    }

    private JdbcEventStorageEngine engine(AppendEventsStatementBuilder append, Class<?> dataType) {
        PersistenceExceptionResolver duplicates = new SQLStateResolver("23505");
        return JdbcEventStorageEngine.builder()
                                     .connectionProvider(transactions.connectionProvider())
                                     .transactionManager(transactions)
                                     .eventSerializer(PostgresServer.SERIALIZER)
                                     .snapshotSerializer(PostgresServer.SERIALIZER)
                                     .persistenceExceptionResolver(duplicates)
                                     .dataType(dataType)
                                     .appendEvents(append)
                                     .build();
    }

    /** Every kind of row Axon writes: domain events with metadata, a revision, text beyond ASCII, and a plain event. */
    private static List<EventMessage<?>> events() {
        return List.of(
                new GenericDomainEventMessage<>("Account", "a", 0, new Opened("a"), MetaData.with("user", "ünï")
                                                                                            .and("count", 3),
                                                "e-0", AT),
                new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 5), MetaData.emptyInstance(),
                                                "e-1", AT.plusNanos(1_000)),
                new GenericDomainEventMessage<>("Account", "ä-€", 0, new Renamed("ä-€", "naïve ☃"),
                                                MetaData.emptyInstance(), "e-2", AT),
                new GenericEventMessage<>(new org.axonframework.messaging.GenericMessage<>(
                        "e-3", new Deposited("b", 7), MetaData.with("trace", "x")), () -> AT));
    }

    private void appendInOneTransaction(JdbcEventStorageEngine engine, List<? extends EventMessage<?>> events) {
        Transaction transaction = transactions.startTransaction();
        try {
            engine.appendEvents(events);
            transaction.commit();
        } catch (RuntimeException failure) {
            transaction.rollback();
            throw failure;
        }
    }

    /** Every column but the global index, of every row, in the order of the global index; bytes as hex. */
    private List<List<String>> rows() throws SQLException {
        List<List<String>> rows = new ArrayList<>();
        try (Connection connection = server.connect(); Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery("SELECT " + FIELDS + " FROM DomainEventEntry "
                                                               + "ORDER BY globalIndex")) {
            while (result.next()) {
                List<String> row = new ArrayList<>();
                for (int column = 1; column <= 9; column++) {
                    Object value = result.getObject(column);
                    row.add(value instanceof byte[] bytes ? HexFormat.of().formatHex(bytes) : String.valueOf(value));
                }
                rows.add(row);
            }
        }
        return rows;
    }

    private List<String> insertingStatements() throws SQLException {
        List<String> statements = new ArrayList<>();
        try (Connection connection = server.connect(); Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery("SELECT statement FROM inserted_by")) {
            while (result.next()) {
                statements.add(result.getString(1).toUpperCase());
            }
        }
        return statements;
    }

    private void emptyTheTable() throws SQLException {
        try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
            statement.execute("TRUNCATE DomainEventEntry");
            statement.execute("TRUNCATE inserted_by");
        }
    }

    @Test
    void theRowsOfOneCopyAreThoseOfAxonsOwnAppendColumnForColumn() throws SQLException {
        appendInOneTransaction(engine(JdbcEventStorageEngineStatements::appendEvents), events());
        List<List<String>> byAxon = rows();
        assertThat(insertingStatements()).containsOnly("INSERT");
        emptyTheTable();

        appendInOneTransaction(engine(PostgresCopyAppend.INSTANCE), events());

        assertThat(insertingStatements()).containsExactly("COPY");
        assertThat(rows()).hasSize(4).isEqualTo(byAxon);
    }

    @Test
    void axonsEngineReadsTheCopiedEventsBackByAggregateAndInTheOrderOfTheGlobalIndex() {
        JdbcEventStorageEngine engine = engine(PostgresCopyAppend.INSTANCE);
        appendInOneTransaction(engine, events());
        appendInOneTransaction(engine, List.of(new GenericDomainEventMessage<>("Account", "a", 2,
                                                                               new Deposited("a", 6))));

        assertThat(engine.readEvents("a").asStream().map(e -> (Object) e.getPayload()))
                .containsExactly(new Opened("a"), new Deposited("a", 5), new Deposited("a", 6));
        assertThat(engine.readEvents("ä-€").asStream().map(e -> (Object) e.getPayload()))
                .containsExactly(new Renamed("ä-€", "naïve ☃"));
        List<TrackedEventMessage<?>> tracked = engine.readEvents(null, false).collect(Collectors.toList());
        assertThat(tracked).extracting(EventMessage::getIdentifier).containsExactly("e-0", "e-1", "e-2", "e-3",
                                                                                   tracked.get(4).getIdentifier());
        assertThat(tracked.get(0).getMetaData()).containsEntry("user", "ünï").containsEntry("count", 3);
        assertThat(tracked.get(3).getPayload()).isEqualTo(new Deposited("b", 7));
    }

    @Test
    void aDuplicateKeyFailsTheWholeCopyAsAxonsOwnAppendFailsAndStoresNothingOfIt() throws SQLException {
        // Axon names the failure after the batch's first event: a creation's, or a later event's conflict.
        List<GenericDomainEventMessage<?>> creationFirst = List.of(
                new GenericDomainEventMessage<>("Account", "b", 0, new Opened("b")),
                new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 1)));
        List<GenericDomainEventMessage<?>> conflictFirst = List.of(
                new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 2)),
                new GenericDomainEventMessage<>("Account", "c", 0, new Opened("c")));
        for (List<GenericDomainEventMessage<?>> batch : List.of(creationFirst, conflictFirst)) {
            List<Class<?>> failures = new ArrayList<>();
            for (AppendEventsStatementBuilder append : List.<AppendEventsStatementBuilder>of(
                    JdbcEventStorageEngineStatements::appendEvents, PostgresCopyAppend.INSTANCE)) {
                emptyTheTable();
                JdbcEventStorageEngine engine = engine(append);
                appendInOneTransaction(engine, List.of(
                        new GenericDomainEventMessage<>("Account", "a", 0, new Opened("a")),
                        new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 9))));
                try {
                    appendInOneTransaction(engine, batch);
                } catch (RuntimeException failure) {
                    failures.add(failure.getClass());
                }
                assertThat(rows()).extracting(row -> row.get(1)).containsExactly("a", "a");
            }
            assertThat(insertingStatements()).containsExactly("COPY");
            assertThat(failures).hasSize(2);
            assertThat(failures.get(1)).isEqualTo(failures.get(0));
        }
    }

    @Test
    void anEventAtATakenSequenceNumberIsAxonsConcurrencyExceptionWhichRingbusTakesForAnotherWriter() {
        JdbcEventStorageEngine engine = engine(PostgresCopyAppend.INSTANCE);
        appendInOneTransaction(engine, List.of(new GenericDomainEventMessage<>("Account", "a", 0, new Opened("a")),
                                               new GenericDomainEventMessage<>("Account", "a", 1,
                                                                               new Deposited("a", 1))));

        org.assertj.core.api.Assertions.assertThatThrownBy(() -> appendInOneTransaction(engine, List.of(
                        new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 2)))))
                .isExactlyInstanceOf(ConcurrencyException.class);
    }

    @Test
    void anEngineWhoseDataTypeIsNotBytesAppendsWithAxonsOwnStatement() throws SQLException {
        try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
            statement.execute("ALTER TABLE DomainEventEntry ALTER COLUMN payload TYPE text "
                                      + "USING encode(payload, 'escape'), ALTER COLUMN metaData TYPE text "
                                      + "USING encode(metaData, 'escape')");
        }
        try {
            JdbcEventStorageEngine engine = engine(PostgresCopyAppend.INSTANCE, String.class);

            appendInOneTransaction(engine, events().subList(0, 2));

            assertThat(insertingStatements()).containsOnly("INSERT");
            assertThat(engine.readEvents("a").asStream().map(e -> (Object) e.getPayload()))
                    .containsExactly(new Opened("a"), new Deposited("a", 5));
        } finally {
            emptyTheTable();
            try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
                statement.execute("ALTER TABLE DomainEventEntry ALTER COLUMN payload TYPE bytea USING "
                                          + "convert_to(payload, 'UTF8'), ALTER COLUMN metaData TYPE bytea USING "
                                          + "convert_to(metaData, 'UTF8')");
            }
        }
    }

    /**
     * The one instance serves every engine: what it learned of a table in one database is not taken for a table of the
     * same name in another, whose sequence column is {@code int4} where the first's is Axon's {@code int8}.
     */
    @Test
    void aTableOfTheSameNameInAnotherDatabaseIsCopiedWithItsOwnColumnTypes() throws SQLException {
        try (Connection admin = server.connect(); Statement statement = admin.createStatement();
             ResultSet exists = statement.executeQuery("SELECT 1 FROM pg_database WHERE datname = 'copy_int4'")) {
            if (!exists.next()) {
                statement.execute("CREATE DATABASE copy_int4");
            }
        }
        String otherUrl = server.jdbcUrl().replace("/postgres?", "/copy_int4?");
        try (var otherPool = PostgresServer.pool(otherUrl, 2)) {
            JdbcTransactionManager otherTransactions = new JdbcTransactionManager(otherPool);
            JdbcEventStorageEngine other = JdbcEventStorageEngine.builder()
                    .connectionProvider(otherTransactions.connectionProvider())
                    .transactionManager(otherTransactions)
                    .eventSerializer(PostgresServer.SERIALIZER)
                    .snapshotSerializer(PostgresServer.SERIALIZER)
                    .persistenceExceptionResolver(new SQLStateResolver("23505"))
                    .appendEvents(PostgresCopyAppend.INSTANCE)
                    .build();
            try (Connection connection = otherPool.getConnection(); Statement statement = connection.createStatement()) {
                statement.execute("DROP TABLE IF EXISTS DomainEventEntry");
                statement.execute("DROP TABLE IF EXISTS SnapshotEventEntry");
            }
            other.createSchema(org.axonframework.eventsourcing.eventstore.jdbc.PostgresEventTableFactory.INSTANCE);
            try (Connection connection = otherPool.getConnection(); Statement statement = connection.createStatement()) {
                statement.execute("ALTER TABLE DomainEventEntry ALTER COLUMN sequenceNumber TYPE int4");
            }
            appendInOneTransaction(engine(PostgresCopyAppend.INSTANCE), events().subList(0, 2)); // int8, learned first

            Transaction transaction = otherTransactions.startTransaction();
            try {
                other.appendEvents(events().subList(0, 2));
                transaction.commit();
            } catch (RuntimeException failure) {
                transaction.rollback();
                throw failure;
            }

            assertThat(other.readEvents("a").asStream().map(e -> e.getSequenceNumber() + ":" + e.getPayload()))
                    .containsExactly("0:" + new Opened("a"), "1:" + new Deposited("a", 5));
        } finally {
            emptyTheTable();
        }
    }
}
