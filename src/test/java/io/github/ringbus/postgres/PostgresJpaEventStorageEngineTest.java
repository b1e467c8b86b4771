package io.github.ringbus.postgres;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.jpa.PostgresJpaEventStorageEngine;
import io.github.ringbus.postgres.HibernateOnPostgres.Columns;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.axonframework.messaging.MetaData;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.axonframework.modelling.command.ConcurrencyException;
import org.axonframework.serialization.Revision;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * {@link PostgresJpaEventStorageEngine} on a real PostgreSQL with Hibernate mapping Axon's entities as Spring Boot
 * does: one statement appends a batch; its rows are those Axon's own JPA engine writes, column for column (the large
 * objects' contents where the columns are Hibernate's default {@code oid}); Axon's engine reads them back by aggregate
 * and in the order of the global index; global indexes come from the entity's own generator, so Axon's own writes and
 * the bulk append never collide; a duplicate key fails the whole batch as Axon's engine fails it. A statement-level
 * trigger counts the statements that insert into the event table.
 */
class PostgresJpaEventStorageEngineTest extends OnPostgres {

    private static final String SCHEMA = "jpa_engine_test";
    private static final Instant AT = Instant.parse("2026-11-29T14:30:00.123456789Z");

    /** A payload with a revision, which Axon writes in its own column. */
    @Revision("7")
    record Renamed(String id, String name) {
    }

    private HikariDataSource pool;
    private HibernateOnPostgres hibernate;

    @BeforeEach
    void openPool() {
        pool = server.pool(4);
    }

    @AfterEach
    void close() {
        if (hibernate != null) {
            hibernate.close();
        }
        pool.close();
    }

    /** Axon's tables as Hibernate maps them, and a trigger that counts the statements inserting events. */
    private void mapped(Columns columns) throws Exception {
        mapped(columns, false);
    }

    private void mapped(Columns columns, boolean hibernateNaming) throws Exception {
        hibernate = HibernateOnPostgres.start(pool, SCHEMA, columns, hibernateNaming);
        try (Connection admin = pool.getConnection(); Statement statement = admin.createStatement()) {
            statement.execute("CREATE TABLE " + SCHEMA + ".inserting_statements (statement text)");
            statement.execute("CREATE FUNCTION " + SCHEMA + ".count_statement() RETURNS trigger AS $$ BEGIN "
                              + "INSERT INTO " + SCHEMA + ".inserting_statements VALUES (current_query()); "
                              + "RETURN NULL; END $$ LANGUAGE plpgsql");
            statement.execute("CREATE TRIGGER count_statement AFTER INSERT ON " + hibernate.eventTable()
                              + " FOR EACH STATEMENT EXECUTE FUNCTION " + SCHEMA + ".count_statement()");
        }
    }

    private JpaEventStorageEngine axons() {
        return JpaEventStorageEngine.builder()
                                    .entityManagerProvider(hibernate)
                                    .transactionManager(hibernate)
                                    .eventSerializer(PostgresServer.SERIALIZER)
                                    .snapshotSerializer(PostgresServer.SERIALIZER)
                                    .persistenceExceptionResolver(new SQLStateResolver("23505"))
                                    .build();
    }

    private JpaEventStorageEngine bulk(boolean on) {
        return PostgresJpaEventStorageEngine.builder()
                                            .bulkAppend(on)
                                            .transactionManager(hibernate)
                                            .entityManagerProvider(hibernate)
                                            .eventSerializer(PostgresServer.SERIALIZER)
                                            .snapshotSerializer(PostgresServer.SERIALIZER)
                                            .persistenceExceptionResolver(new SQLStateResolver("23505"))
                                            .build();
    }

    /** Every kind of row Axon writes: domain events with metadata, a revision, text beyond ASCII, and a plain event. */
    private static List<EventMessage<?>> events() {
        return List.of(
                new GenericDomainEventMessage<>("Account", "a", 0, new Opened("a"),
                                                MetaData.with("user", "ünï").and("count", 3), "e-0", AT),
                new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 5), MetaData.emptyInstance(),
                                                "e-1", AT.plusNanos(1_000)),
                new GenericDomainEventMessage<>("Account", "ä-€", 0, new Renamed("ä-€", "naïve ☃"),
                                                MetaData.emptyInstance(), "e-2", AT),
                new GenericEventMessage<>(new org.axonframework.messaging.GenericMessage<>(
                        "e-3", new Deposited("b", 7), MetaData.with("trace", "x")), () -> AT));
    }

    private void appendInOneTransaction(JpaEventStorageEngine engine, List<? extends EventMessage<?>> events) {
        Transaction transaction = hibernate.startTransaction();
        try {
            engine.appendEvents(events);
            transaction.commit();
        } catch (RuntimeException failure) {
            transaction.rollback();
            throw failure;
        }
    }

    /**
     * Every column but the global index, of every row in the order of the global index: bytes as hex, and for an
     * {@code oid} column the large object's bytes ({@code lo_get}), not its number.
     */
    private List<List<String>> rows(Columns columns) throws SQLException {
        String bytes = columns == Columns.OID ? "lo_get(%s)" : "%s";
        String select = "SELECT event_identifier, aggregate_identifier, sequence_number, type, time_stamp, "
                        + "payload_type, payload_revision, " + bytes.formatted("payload") + ", "
                        + bytes.formatted("meta_data") + " FROM " + hibernate.eventTable() + " ORDER BY global_index";
        List<List<String>> rows = new ArrayList<>();
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery(select)) {
            while (result.next()) {
                List<String> row = new ArrayList<>();
                for (int column = 1; column <= 9; column++) {
                    Object value = result.getObject(column);
                    row.add(value instanceof byte[] data ? HexFormat.of().formatHex(data) : String.valueOf(value));
                }
                rows.add(row);
            }
        }
        return rows;
    }

    private long count(String query) throws SQLException {
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement();
             ResultSet result = statement.executeQuery(query)) {
            result.next();
            return result.getLong(1);
        }
    }

    private long insertingStatements() throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".inserting_statements");
    }

    /** How many of the statements that inserted events were the bulk append's ({@code unnest} of arrays). */
    private long bulkStatements() throws SQLException {
        return count("SELECT count(*) FROM " + SCHEMA + ".inserting_statements WHERE statement LIKE '%unnest(%'");
    }

    private void emptyTheTable() throws SQLException {
        try (Connection admin = pool.getConnection(); Statement statement = admin.createStatement()) {
            statement.execute("TRUNCATE " + hibernate.eventTable());
            statement.execute("TRUNCATE " + SCHEMA + ".inserting_statements");
        }
    }

    @Test
    void onHibernatesDefaultOidColumnsOneStatementWritesTheRowsAndLargeObjectsOfAxonsOwnAppend() throws Exception {
        mapped(Columns.OID);
        appendInOneTransaction(axons(), events());
        List<List<String>> byAxon = rows(Columns.OID);
        assertThat(insertingStatements()).isEqualTo(4);
        emptyTheTable();

        appendInOneTransaction(bulk(true), events());

        assertThat(insertingStatements()).isEqualTo(1);
        assertThat(bulkStatements()).isEqualTo(1);
        assertThat(rows(Columns.OID)).hasSize(4).isEqualTo(byAxon);
        assertThat(count("SELECT count(DISTINCT payload) + count(DISTINCT meta_data) FROM " + hibernate.eventTable()))
                .as("a large object of its own for each value").isEqualTo(8);
    }

    @Test
    void onByteaColumnsOneStatementWritesTheRowsOfAxonsOwnAppend() throws Exception {
        mapped(Columns.BYTEA);
        appendInOneTransaction(axons(), events());
        List<List<String>> byAxon = rows(Columns.BYTEA);
        assertThat(bulkStatements()).isZero();
        emptyTheTable();

        appendInOneTransaction(bulk(true), events());

        assertThat(insertingStatements()).isEqualTo(1);
        assertThat(bulkStatements()).isEqualTo(1);
        assertThat(rows(Columns.BYTEA)).hasSize(4).isEqualTo(byAxon);
    }

    @Test
    void axonsEngineReadsTheEventsBackByAggregateAndInTheOrderOfTheGlobalIndex() throws Exception {
        mapped(Columns.OID);
        JpaEventStorageEngine engine = bulk(true);
        appendInOneTransaction(engine, events());
        appendInOneTransaction(engine, List.of(new GenericDomainEventMessage<>("Account", "a", 2,
                                                                               new Deposited("a", 6))));

        Transaction reading = hibernate.startTransaction();
        try {
            assertThat(engine.readEvents("a").asStream().map(e -> (Object) e.getPayload()))
                    .containsExactly(new Opened("a"), new Deposited("a", 5), new Deposited("a", 6));
            assertThat(engine.readEvents("ä-€").asStream().map(e -> (Object) e.getPayload()))
                    .containsExactly(new Renamed("ä-€", "naïve ☃"));
            List<TrackedEventMessage<?>> tracked = engine.readEvents(null, false).collect(Collectors.toList());
            assertThat(tracked).extracting(EventMessage::getIdentifier)
                               .containsExactly("e-0", "e-1", "e-2", "e-3", tracked.get(4).getIdentifier());
            assertThat(tracked.get(0).getMetaData()).containsEntry("user", "ünï").containsEntry("count", 3);
            assertThat(tracked.get(3).getPayload()).isEqualTo(new Deposited("b", 7));
        } finally {
            reading.rollback();
        }
    }

    @Test
    void globalIndexesComeFromTheEntitysGeneratorSoAxonsOwnWritesAndTheBulkAppendNeverCollide() throws Exception {
        mapped(Columns.OID);
        JpaEventStorageEngine axons = axons();
        JpaEventStorageEngine bulk = bulk(true);
        for (int round = 0; round < 30; round++) {
            appendInOneTransaction(round % 2 == 0 ? axons : bulk, List.of(
                    new GenericDomainEventMessage<>("Account", "a", 2L * round, new Deposited("a", round)),
                    new GenericDomainEventMessage<>("Account", "a", 2L * round + 1, new Deposited("a", -round))));
        }

        assertThat(count("SELECT count(DISTINCT global_index) FROM " + hibernate.eventTable())).isEqualTo(60);
        assertThat(insertingStatements()).as("30 by Axon, one per event; 15 by the bulk append")
                                         .isEqualTo(30 + 15);
        Transaction reading = hibernate.startTransaction();
        try {
            assertThat(bulk.readEvents(null, false).map(e -> (Object) e.getPayload()).collect(Collectors.toList()))
                    .hasSize(60).startsWith(new Deposited("a", 0), new Deposited("a", 0), new Deposited("a", 1));
        } finally {
            reading.rollback();
        }
    }

    @Test
    void aDuplicateKeyFailsTheWholeBatchAsAxonsOwnAppendFailsAndStoresNothingOfIt() throws Exception {
        mapped(Columns.OID);
        appendInOneTransaction(axons(), List.of(new GenericDomainEventMessage<>("Account", "b", 0, new Opened("b")),
                                                new GenericDomainEventMessage<>("Account", "b", 1,
                                                                                new Deposited("b", 1))));
        List<GenericDomainEventMessage<?>> creationFirst = List.of(
                new GenericDomainEventMessage<>("Account", "b", 0, new Opened("b")),
                new GenericDomainEventMessage<>("Account", "c", 0, new Opened("c")));
        List<GenericDomainEventMessage<?>> conflictFirst = List.of(
                new GenericDomainEventMessage<>("Account", "b", 1, new Deposited("b", 2)),
                new GenericDomainEventMessage<>("Account", "c", 0, new Opened("c")));

        // Axon names the failure after the batch's first event: a creation's, or a later event's conflict.
        for (JpaEventStorageEngine engine : List.of(axons(), bulk(true))) {
            assertThatThrownBy(() -> appendInOneTransaction(engine, creationFirst))
                    .isExactlyInstanceOf(AggregateStreamCreationException.class);
            assertThatThrownBy(() -> appendInOneTransaction(engine, conflictFirst))
                    .isExactlyInstanceOf(ConcurrencyException.class);
        }
        assertThat(count("SELECT count(*) FROM " + hibernate.eventTable())).isEqualTo(2);
    }

    @Test
    void turnedOffItAppendsAsAxonsEngineOneInsertPerEvent() throws Exception {
        mapped(Columns.OID);
        PostgresJpaEventStorageEngine off = (PostgresJpaEventStorageEngine) bulk(false);

        appendInOneTransaction(off, events());

        assertThat(off.bulkAppend()).isFalse();
        assertThat(insertingStatements()).isEqualTo(4);
        assertThat(bulkStatements()).isZero();
        assertThat(count("SELECT count(*) FROM " + hibernate.eventTable())).isEqualTo(4);
    }

    /**
     * Without Spring Boot's naming, Hibernate names the columns {@code metaData}, {@code payloadType} and so on,
     * unquoted, which PostgreSQL keeps as {@code metadata}, {@code payloadtype}: the engine finds them as PostgreSQL
     * folds them, and appends in one statement (it fell back to Axon's append, one insert per event, saying nothing).
     */
    @Test
    void withHibernatesOwnNamingWhichPostgresFoldsToLowerCaseOneStatementStillWritesTheBatch() throws Exception {
        mapped(Columns.OID, true);
        JpaEventStorageEngine engine = bulk(true);

        appendInOneTransaction(engine, events());

        assertThat(insertingStatements()).isEqualTo(1);
        assertThat(bulkStatements()).isEqualTo(1);
        Transaction reading = hibernate.startTransaction();
        try {
            assertThat(engine.readEvents("a").asStream().map(e -> (Object) e.getPayload()))
                    .containsExactly(new Opened("a"), new Deposited("a", 5));
            assertThat(engine.readEvents(null, false).map(EventMessage::getIdentifier).collect(Collectors.toList()))
                    .containsExactly("e-0", "e-1", "e-2", "e-3");
        } finally {
            reading.rollback();
        }
    }

    /**
     * Where it cannot append in one statement (here: a subclass makes entities of its own), it says why, once, and
     * appends as Axon's engine does.
     */
    @Test
    void anEngineThatCannotAppendInOneStatementSaysWhyOnceAndAppendsAsAxons() throws Exception {
        mapped(Columns.OID);
        JpaEventStorageEngine engine = new OwnEntities((PostgresJpaEventStorageEngine.Builder) PostgresJpaEventStorageEngine
                .builder()
                .transactionManager(hibernate)
                .entityManagerProvider(hibernate)
                .eventSerializer(PostgresServer.SERIALIZER)
                .snapshotSerializer(PostgresServer.SERIALIZER)
                .persistenceExceptionResolver(new SQLStateResolver("23505")));
        List<String> logged = io.github.ringbus.fixtures.LoggedLines.whileRunning(() -> {
            appendInOneTransaction(engine, List.of(new GenericDomainEventMessage<>("Account", "t", 0,
                                                                                   new Opened("t"))));
            appendInOneTransaction(engine, List.of(new GenericDomainEventMessage<>("Account", "t", 1,
                                                                                   new Deposited("t", 1))));
        });

        assertThat(bulkStatements()).isZero();
        assertThat(insertingStatements()).isEqualTo(2);
        assertThat(logged).filteredOn(line -> line.contains("Axon's own append")).singleElement().asString()
                          .contains("WARN").contains("entities of its own");
    }

    /** An engine that makes its own entities (here: Axon's, but it could be anything). */
    static final class OwnEntities extends PostgresJpaEventStorageEngine {

        OwnEntities(PostgresJpaEventStorageEngine.Builder builder) {
            super(builder);
        }

        @Override
        protected Object createEventEntity(EventMessage<?> eventMessage,
                                           org.axonframework.serialization.Serializer serializer) {
            return super.createEventEntity(eventMessage, serializer);
        }
    }
}
