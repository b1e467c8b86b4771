package io.github.ringbus.jpa;

import jakarta.persistence.EntityManager;
import java.sql.Connection;
import java.util.Locale;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.axonframework.common.DateTimeUtils;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.jpa.DomainEventEntry;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.axonframework.serialization.SerializedObject;
import org.axonframework.serialization.Serializer;
import org.hibernate.HibernateException;
import org.hibernate.dialect.PostgreSQLDialect;
import org.hibernate.engine.spi.SharedSessionContractImplementor;
import org.hibernate.generator.Generator;
import org.hibernate.id.IdentifierGenerator;
import org.hibernate.metamodel.mapping.AttributeMapping;
import org.hibernate.metamodel.mapping.SelectableMapping;
import org.hibernate.persister.entity.EntityPersister;

/**
 * Axon's {@link JpaEventStorageEngine} that, on PostgreSQL with Hibernate, appends a batch of events in one
 * {@code INSERT ... SELECT FROM unnest(...)} statement instead of one {@code persist} and one {@code INSERT} per event;
 * everything else (reads, snapshots, tokens, gaps, upcasting) is Axon's engine, unchanged. Build it as Axon's:
 * {@code PostgresJpaEventStorageEngine.builder()} takes every setting of {@link JpaEventStorageEngine.Builder}.
 * <p>
 * <b>The rows are Axon's.</b> Each event becomes the values of the entity Axon's engine would persist
 * ({@code createEventEntity}, not overridden),
 * its global index drawn from the entity's own Hibernate identifier generator (the same sequence and pooled optimizer
 * as every other writer of the table, so that they never collide), and its columns are the names Hibernate maps, in the
 * same transaction and on the same connection as the engine's own work. Payload and metadata columns of type
 * {@code oid} (Hibernate's mapping of Axon's {@code @Lob byte[]} on PostgreSQL, what Spring Boot's defaults create)
 * get their large objects from {@code lo_from_bytea} inside the same statement: no round trip per value and no
 * migration; {@code bytea} columns get the bytes. A duplicate key fails the statement with PostgreSQL's unique
 * violation, converted as Hibernate converts its flush's failures and reported as the engine reports its own
 * ({@code ConcurrencyException} or {@code AggregateStreamCreationException}, by the engine's
 * {@code PersistenceExceptionResolver}).
 * <p>
 * <b>Where it appends so.</b> Only with Hibernate on PostgreSQL (its {@link PostgreSQLDialect}), Axon's own
 * {@link DomainEventEntry} entity (the engine's {@code createEventEntity} and {@code domainEventEntryEntityName} not
 * overridden to another), an identifier generated before the insert (a sequence, not an identity column) and payload
 * and metadata columns of type {@code oid} or {@code bytea}. Anywhere else, and when built with
 * {@link Builder#bulkAppend(boolean) bulkAppend(false)}, every append is Axon's own. What the first append finds out
 * is kept for the engine's life.
 * <p>
 * Thread-safe as Axon's engine is: each append works in the current transaction of the thread that calls it.
 */
public class PostgresJpaEventStorageEngine extends JpaEventStorageEngine {

    /** Axon's entity's persistent attributes, in the order of the statement's columns. */
    private static final Logger logger = LoggerFactory.getLogger(PostgresJpaEventStorageEngine.class);

    private static final String[] ATTRIBUTES = {"eventIdentifier", "metaData", "payload", "payloadRevision",
            "payloadType", "timeStamp", "aggregateIdentifier", "sequenceNumber", "type"};

    private final TransactionManager transactionManager;
    private final boolean bulkAppend;
    /**
     * How this engine appends, found out by the first append in a transaction and kept: null before. Written by any
     * thread that appends (each finds the same answer for the same database and mapping; the last write wins).
     */
    private volatile Plan plan;

    /**
     * An engine as {@link JpaEventStorageEngine#JpaEventStorageEngine(JpaEventStorageEngine.Builder)} builds it.
     *
     * @param builder the settings
     */
    protected PostgresJpaEventStorageEngine(Builder builder) {
        super(builder);
        this.transactionManager = builder.transactions;
        this.bulkAppend = builder.bulkAppend;
        this.plan = builder.bulkAppend ? null : Plan.AXONS;
    }

    /** @return a builder with Axon's engine's defaults, appending in bulk where it can */
    public static Builder builder() {
        return new Builder();
    }

    /** @return whether this engine appends in bulk where it can (its builder's {@code bulkAppend}) */
    public boolean bulkAppend() {
        return bulkAppend;
    }

    @Override
    protected void appendEvents(List<? extends EventMessage<?>> events, Serializer serializer) {
        if (events.isEmpty() || plan == Plan.AXONS) {
            super.appendEvents(events, serializer);
            return;
        }
        transactionManager.executeInTransaction(() -> {
            EntityManager entityManager = entityManager();
            Plan current = plan;
            if (current == null) {
                try {
                    current = planFor(entityManager);
                } catch (LinkageError otherHibernate) {
                    // A Hibernate without the mapping API this engine reads (compiled against 6.6): Axon's append.
                    current = Plan.AXONS;
                }
                plan = current;
            }
            if (current == Plan.AXONS) {
                // Joins this transaction.
                super.appendEvents(events, serializer);
                return;
            }
            Plan decided = current;
            SharedSessionContractImplementor session = entityManager.unwrap(SharedSessionContractImplementor.class);
            try {
                Rows rows = rowsOf(events, serializer, session, decided);
                session.doWork(connection -> decided.insert(connection, rows));
            } catch (HibernateException e) {
                handlePersistenceException(session.getExceptionConverter().convert(e), events.get(0));
            } catch (RuntimeException e) {
                handlePersistenceException(e, events.get(0));
            }
        });
    }

    /**
     * The columns of a batch, one array per column, holding what Axon's {@link DomainEventEntry} for each event holds
     * (its constructor's values, computed as it computes them: the message's own serialization, kept from the handler
     * thread where it was serialized there). One {@code Rows} per batch; nothing per event beyond the values.
     */
    private Rows rowsOf(List<? extends EventMessage<?>> events, Serializer serializer,
                        SharedSessionContractImplementor session, Plan plan) {
        int size = events.size();
        Rows rows = new Rows(size);
        Timestamps timestamps = new Timestamps();
        for (int i = 0; i < size; i++) {
            DomainEventMessage<?> event = asDomainEventMessage(events.get(i));
            SerializedObject<byte[]> payload = event.serializePayload(serializer, byte[].class);
            SerializedObject<byte[]> metaData = event.serializeMetaData(serializer, byte[].class);
            // The generator does not read the entity (a sequence); Hibernate's API asks for one.
            rows.globalIndex[i] = ((Number) plan.identifiers.generate(session, event)).longValue();
            rows.eventIdentifier[i] = event.getIdentifier();
            rows.metaData[i] = metaData.getData();
            rows.payload[i] = payload.getData();
            rows.payloadRevision[i] = payload.getType().getRevision();
            rows.payloadType[i] = payload.getType().getName();
            rows.timeStamp[i] = timestamps.format(event.getTimestamp());
            rows.aggregateIdentifier[i] = event.getAggregateIdentifier();
            rows.sequenceNumber[i] = event.getSequenceNumber();
            rows.type[i] = event.getType();
        }
        return rows;
    }

    /**
     * Axon's {@link DateTimeUtils#formatInstant} of each timestamp, its formatter called once per second of the batch:
     * the text up to the second is Axon's for that second, the milliseconds (three digits, truncated, as Axon's
     * formatter prints them) and {@code Z} appended. A batch's events mostly share their second, and Axon's formatter
     * was a fifth of the store thread's samples. Confined to one call of {@link #rowsOf}.
     */
    static final class Timestamps {

        private long second = Long.MIN_VALUE;
        private String upToTheSecond;
        private final StringBuilder text = new StringBuilder(32);

        String format(java.time.Instant timestamp) {
            long epochSecond = timestamp.getEpochSecond();
            if (epochSecond != second || upToTheSecond == null) {
                String whole = DateTimeUtils.formatInstant(java.time.Instant.ofEpochSecond(epochSecond));
                // Axon's text ends ".000Z" for a whole second: everything before it is the second's.
                upToTheSecond = whole.substring(0, whole.length() - 5);
                second = epochSecond;
            }
            int millis = timestamp.getNano() / 1_000_000;
            text.setLength(0);
            text.append(upToTheSecond).append('.')
                .append((char) ('0' + millis / 100)).append((char) ('0' + millis / 10 % 10))
                .append((char) ('0' + millis % 10)).append('Z');
            return text.toString();
        }
    }

    /** Decides how this engine appends, from the session's dialect, the entity's mapping and the table's columns. */
    private Plan planFor(EntityManager entityManager) {
        SharedSessionContractImplementor session;
        try {
            session = entityManager.unwrap(SharedSessionContractImplementor.class);
        } catch (RuntimeException notHibernate) {
            logger.info("PostgresJpaEventStorageEngine appends with Axon's own append: its JPA provider is not "
                                + "Hibernate ({})", notHibernate.toString());
            return Plan.AXONS;
        }
        if (!(session.getJdbcServices().getDialect() instanceof PostgreSQLDialect dialect)) {
            logger.info("PostgresJpaEventStorageEngine appends with Axon's own append: the database is not "
                                + "PostgreSQL (Hibernate's dialect: {})",
                        session.getJdbcServices().getDialect().getClass().getName());
            return Plan.AXONS;
        }
        if (!DomainEventEntry.class.getSimpleName().equals(domainEventEntryEntityName())
                || overridesCreateEventEntity(getClass())) {
            return axons("the engine stores entities of its own (" + domainEventEntryEntityName() + "), not Axon's "
                                 + "DomainEventEntry");
        }
        EntityPersister persister = session.getFactory().getMappingMetamodel()
                                           .getEntityDescriptor(DomainEventEntry.class);
        Generator generator = persister.getGenerator();
        String[] identifier = persister.getIdentifierColumnNames();
        if (!(generator instanceof IdentifierGenerator identifiers) || identifier.length != 1) {
            return axons("the entity's global index is not made by one Hibernate identifier generator (" + generator
                                 + ")");
        }
        String[] columns = new String[ATTRIBUTES.length];
        for (int i = 0; i < ATTRIBUTES.length; i++) {
            AttributeMapping attribute = persister.findAttributeMapping(ATTRIBUTES[i]);
            if (!(attribute instanceof SelectableMapping column)) {
                return axons("the entity's attribute [" + ATTRIBUTES[i] + "] is not mapped to one column");
            }
            columns[i] = column.getSelectionExpression();
        }
        String table = persister.getMappedTableDetails().getTableName();
        Map<String, String> types = new HashMap<>();
        session.doWork(connection -> types.putAll(columnTypes(connection, table)));
        if (types.isEmpty()) {
            return axons("PostgreSQL has no table [" + table + "] (the entity's table as Hibernate names it)");
        }
        String metaData = types.get(asPostgresKeepsIt(columns[1]));
        String payload = types.get(asPostgresKeepsIt(columns[2]));
        if (!isLargeObjectOrBytes(metaData) || !isLargeObjectOrBytes(payload)) {
            return axons("its columns [" + columns[1] + "] and [" + columns[2] + "] are of type [" + metaData
                                 + "] and [" + payload + "] in table [" + table + "], where one statement writes "
                                 + "oid or bytea only (PostgreSQL's columns: " + types + ")");
        }
        return new Plan(insert(table, identifier[0], columns, "oid".equals(metaData), "oid".equals(payload)),
                        identifiers);
    }

    /** Whether a subclass makes its own entities (then its rows are not Axon's, and Axon's append writes them). */
    static boolean overridesCreateEventEntity(Class<?> engine) {
        for (Class<?> type = engine; type != JpaEventStorageEngine.class && type != null; type = type.getSuperclass()) {
            try {
                type.getDeclaredMethod("createEventEntity", EventMessage.class, Serializer.class);
                return true;
            } catch (NoSuchMethodException notHere) {
                // Look further up.
            }
        }
        return false;
    }

    /**
     * A column's name as PostgreSQL keeps it: a quoted one as written, an unquoted one folded to lower case (as
     * PostgreSQL folds unquoted identifiers; Hibernate's own naming writes {@code metaData}, which PostgreSQL keeps as
     * {@code metadata}).
     */
    static String asPostgresKeepsIt(String column) {
        if (column.length() > 1 && column.startsWith("\"") && column.endsWith("\"")) {
            return column.substring(1, column.length() - 1);
        }
        return column.toLowerCase(Locale.ROOT);
    }

    /** Axon's own append for this engine's life, with the reason in the log (once per engine, at its first append). */
    private Plan axons(String why) {
        logger.warn("PostgresJpaEventStorageEngine appends with Axon's own append, one INSERT per event, for the life "
                            + "of this engine: {}", why);
        return Plan.AXONS;
    }

    private static boolean isLargeObjectOrBytes(String type) {
        return "oid".equals(type) || "bytea".equals(type);
    }

    /** The table's columns and their types, as PostgreSQL keeps them (see {@link #asPostgresKeepsIt}). */
    private static Map<String, String> columnTypes(Connection connection, String table) throws SQLException {
        Map<String, String> types = new HashMap<>();
        try (PreparedStatement statement = connection.prepareStatement(
                "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute "
                + "WHERE attrelid = to_regclass(?) AND attnum > 0 AND NOT attisdropped")) {
            statement.setString(1, table);
            try (ResultSet columns = statement.executeQuery()) {
                while (columns.next()) {
                    types.put(columns.getString(1), columns.getString(2));
                }
            }
        }
        return types;
    }

    /**
     * One statement for a whole batch: every column an array parameter, unnested into rows; large objects made on
     * the server from the bytes ({@code lo_from_bytea(0, ...)}: a new object of a new oid).
     */
    private static String insert(String table, String identifier, String[] columns, boolean metaDataIsLargeObject,
                                 boolean payloadIsLargeObject) {
        return "INSERT INTO " + table + " (" + identifier + ", " + String.join(", ", columns) + ") "
               + "SELECT g, e, " + (metaDataIsLargeObject ? "lo_from_bytea(0, m)" : "m") + ", "
               + (payloadIsLargeObject ? "lo_from_bytea(0, p)" : "p") + ", r, pt, ts, a, s, t "
               + "FROM unnest(?::int8[], ?::text[], ?::bytea[], ?::bytea[], ?::text[], ?::text[], ?::text[], "
               + "?::text[], ?::int8[], ?::text[]) AS batch(g, e, m, p, r, pt, ts, a, s, t)";
    }

    /** How the engine appends: the statement and the identifier generator, or {@link #AXONS}. */
    private record Plan(String sql, IdentifierGenerator identifiers) {

        /** Axon's own append. */
        static final Plan AXONS = new Plan(null, null);

        void insert(Connection connection, Rows rows) throws SQLException {
            try (PreparedStatement statement = connection.prepareStatement(sql)) {
                statement.setArray(1, connection.createArrayOf("int8", rows.globalIndex));
                statement.setArray(2, connection.createArrayOf("text", rows.eventIdentifier));
                statement.setArray(3, connection.createArrayOf("bytea", rows.metaData));
                statement.setArray(4, connection.createArrayOf("bytea", rows.payload));
                statement.setArray(5, connection.createArrayOf("text", rows.payloadRevision));
                statement.setArray(6, connection.createArrayOf("text", rows.payloadType));
                statement.setArray(7, connection.createArrayOf("text", rows.timeStamp));
                statement.setArray(8, connection.createArrayOf("text", rows.aggregateIdentifier));
                statement.setArray(9, connection.createArrayOf("int8", rows.sequenceNumber));
                statement.setArray(10, connection.createArrayOf("text", rows.type));
                int inserted = statement.executeUpdate();
                if (inserted != rows.globalIndex.length) {
                    throw new SQLException("Inserted " + inserted + " event rows of " + rows.globalIndex.length);
                }
            }
        }
    }

    /** A batch's columns. */
    private static final class Rows {

        final Long[] globalIndex;
        final String[] eventIdentifier;
        final byte[][] metaData;
        final byte[][] payload;
        final String[] payloadRevision;
        final String[] payloadType;
        final String[] timeStamp;
        final String[] aggregateIdentifier;
        final Long[] sequenceNumber;
        final String[] type;

        Rows(int size) {
            globalIndex = new Long[size];
            eventIdentifier = new String[size];
            metaData = new byte[size][];
            payload = new byte[size][];
            payloadRevision = new String[size];
            payloadType = new String[size];
            timeStamp = new String[size];
            aggregateIdentifier = new String[size];
            sequenceNumber = new Long[size];
            type = new String[size];
        }
    }

    /**
     * Axon's {@link JpaEventStorageEngine.Builder}, building a {@link PostgresJpaEventStorageEngine}. Its inherited
     * setters return Axon's builder type; {@link #build()} still builds this engine.
     */
    public static class Builder extends JpaEventStorageEngine.Builder {

        private TransactionManager transactions;
        private boolean bulkAppend = true;

        @Override
        public Builder transactionManager(TransactionManager transactionManager) {
            super.transactionManager(transactionManager);
            this.transactions = transactionManager;
            return this;
        }

        /**
         * Whether to append in bulk where it can (the default); {@code false}: every append is Axon's own.
         *
         * @param bulkAppend {@code false} to turn the bulk append off
         * @return this builder
         */
        public Builder bulkAppend(boolean bulkAppend) {
            this.bulkAppend = bulkAppend;
            return this;
        }

        @Override
        public PostgresJpaEventStorageEngine build() {
            return new PostgresJpaEventStorageEngine(this);
        }
    }
}
