package io.github.ringbus.jdbc;

import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.jdbc.EventSchema;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.AppendEventsStatementBuilder;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.JdbcEventStorageEngineStatements;
import org.axonframework.eventsourcing.eventstore.jdbc.statements.TimestampWriter;
import org.axonframework.serialization.SerializedObject;
import org.axonframework.serialization.Serializer;
import org.postgresql.PGConnection;
import org.postgresql.copy.CopyIn;

import java.io.ByteArrayOutputStream;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.sql.DatabaseMetaData;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Axon's {@code JdbcEventStorageEngine} appending a batch of events on PostgreSQL in one binary {@code COPY} instead
 * of one {@code INSERT} per event: give it to the engine's builder,
 * {@code JdbcEventStorageEngine.builder().appendEvents(PostgresCopyAppend.INSTANCE)}. The rows are those Axon's own
 * append writes, column for column (the same values, serialized by the engine's serializer into its data type, the
 * timestamp as the engine's {@link TimestampWriter} writes it); only the statement differs. A duplicate key fails the
 * whole copy with PostgreSQL's unique violation, which the engine reports as it reports its own (Axon's
 * {@code ConcurrencyException}).
 * <p>
 * <b>Where it copies.</b> Only on PostgreSQL, for an event table whose nine columns have the types of Axon's own
 * PostgreSQL schema or close kin ({@code varchar}, {@code text} for the strings, {@code int8} or {@code int4} for the
 * sequence number, {@code bytea} for payload and metadata with the engine's default data type {@code byte[]}), and
 * a timestamp written as a string. Anything else (another database, {@code oid} or {@code jsonb} payload columns, a
 * timestamp written as a SQL timestamp, a connection that is not pgjdbc's) is appended by Axon's own statement
 * ({@link JdbcEventStorageEngineStatements#appendEvents}), unchanged. The table's column types are read once per
 * database URL, user and table name, and kept: a schema chosen after the connection was made (a pool's
 * {@code SET search_path}) rather than in the URL ({@code currentSchema}) or the table's name is not told apart.
 * <p>
 * Thread-safe and stateless apart from that cache of column types: one instance serves every engine and thread.
 */
public final class PostgresCopyAppend implements AppendEventsStatementBuilder {

    private static final Logger logger = LoggerFactory.getLogger(PostgresCopyAppend.class);

    /** The one instance. */
    public static final PostgresCopyAppend INSTANCE = new PostgresCopyAppend();

    private static final byte[] HEADER = {'P', 'G', 'C', 'O', 'P', 'Y', '\n', (byte) 0xFF, '\r', '\n', 0,
            0, 0, 0, 0, // flags
            0, 0, 0, 0}; // header extension length
    private static final int FIELDS = 9;

    /** Per database URL, user and event table (as the schema names it): how its columns are encoded. */
    private final Map<String, Encoding> encodings = new ConcurrentHashMap<>();

    private PostgresCopyAppend() {
    }

    @Override
    public PreparedStatement build(Connection connection, EventSchema schema, Class<?> dataType,
                                   List<? extends EventMessage<?>> events, Serializer serializer,
                                   TimestampWriter timestampWriter) throws SQLException {
        Encoding encoding = dataType == byte[].class ? encodingOf(connection, schema) : Encoding.NONE;
        if (encoding == Encoding.NONE) {
            return JdbcEventStorageEngineStatements.appendEvents(connection, schema, dataType, events, serializer,
                                                                 timestampWriter);
        }
        ByteArrayOutputStream rows = new ByteArrayOutputStream(256 * events.size() + 64);
        rows.writeBytes(HEADER);
        TimestampText timestamp = new TimestampText();
        for (EventMessage<?> message : events) {
            DomainEventMessage<?> event = asDomainEventMessage(message);
            SerializedObject<byte[]> payload = event.serializePayload(serializer, byte[].class);
            SerializedObject<byte[]> metaData = event.serializeMetaData(serializer, byte[].class);
            String written = timestamp.of(timestampWriter, event.getTimestamp());
            if (written == null) {
                // The engine writes its timestamps as something other than a string: its own statement, then.
                return JdbcEventStorageEngineStatements.appendEvents(connection, schema, dataType, events,
                                                                     serializer, timestampWriter);
            }
            shortValue(rows, FIELDS);
            text(rows, event.getIdentifier());
            text(rows, event.getAggregateIdentifier());
            if (encoding.sequenceBytes == 8) {
                intValue(rows, 8);
                longValue(rows, event.getSequenceNumber());
            } else {
                intValue(rows, 4);
                intValue(rows, Math.toIntExact(event.getSequenceNumber()));
            }
            text(rows, event.getType());
            text(rows, written);
            text(rows, payload.getType().getName());
            text(rows, payload.getType().getRevision());
            bytes(rows, payload.getData());
            bytes(rows, metaData.getData());
        }
        shortValue(rows, -1);
        String copy = "COPY " + schema.domainEventTable() + " (" + schema.domainEventFields()
                + ") FROM STDIN (FORMAT binary)";
        return copyStatement(connection.unwrap(PGConnection.class), copy, rows, events.size());
    }

    /**
     * A statement whose {@code executeBatch} runs the copy, as Axon's engine runs its batch (so that a failure of the
     * copy reaches the engine's own handling of a failed append); it does nothing else.
     */
    private static PreparedStatement copyStatement(PGConnection connection, String copy, ByteArrayOutputStream rows,
                                                   int events) {
        InvocationHandler handler = (proxy, method, args) -> switch (method.getName()) {
            case "executeBatch" -> {
                CopyIn in = connection.getCopyAPI().copyIn(copy);
                try {
                    byte[] data = rows.toByteArray();
                    in.writeToCopy(data, 0, data.length);
                    long stored = in.endCopy();
                    if (stored != events) {
                        throw new SQLException("The copy stored " + stored + " rows of " + events);
                    }
                } finally {
                    if (in.isActive()) {
                        in.cancelCopy();
                    }
                }
                int[] counts = new int[events];
                java.util.Arrays.fill(counts, 1);
                yield counts;
            }
            case "close" -> null;
            case "isClosed" -> false;
            case "toString" -> copy;
            case "hashCode" -> System.identityHashCode(proxy);
            case "equals" -> proxy == args[0];
            default -> throw new SQLException("A copy's statement cannot " + method.getName());
        };
        return (PreparedStatement) Proxy.newProxyInstance(PostgresCopyAppend.class.getClassLoader(),
                                                          new Class<?>[]{PreparedStatement.class}, handler);
    }

    /** As Axon's own append: an event without an aggregate is stored as its own aggregate of one event. */
    private static DomainEventMessage<?> asDomainEventMessage(EventMessage<?> event) {
        if (event instanceof DomainEventMessage<?> domain) {
            return domain;
        }
        return new GenericDomainEventMessage<>(null, event.getIdentifier(), 0L, event, event::getTimestamp);
    }

    private Encoding encodingOf(Connection connection, EventSchema schema) throws SQLException {
        // Per database, user and table name: one instance serves every engine of the JVM, and two databases (or two
        // schemas named in the URL) may each have a table of that name with other column types. The driver answers
        // the URL and the user from the connection's settings, without a round trip.
        DatabaseMetaData database = connection.getMetaData();
        String key = database.getURL() + '\u0000' + database.getUserName() + '\u0000' + schema.domainEventTable();
        Encoding known = encodings.get(key);
        if (known != null) {
            return known;
        }
        Encoding read = readEncoding(connection, schema);
        if (encodings.put(key, read) == null && read == Encoding.NONE
                && "PostgreSQL".equals(database.getDatabaseProductName())) {
            logger.warn("PostgresCopyAppend appends to table [{}] of [{}] with Axon's own statement, one INSERT per "
                                + "event: its columns are not of the types a binary COPY writes (text or varchar, "
                                + "int8 or int4 for the sequence number, bytea for payload and metadata)",
                        schema.domainEventTable(), database.getURL());
        }
        return read;
    }

    /** How the table's columns are copied, from PostgreSQL's catalog; {@link Encoding#NONE} when they cannot be. */
    private static Encoding readEncoding(Connection connection, EventSchema schema) throws SQLException {
        if (!"PostgreSQL".equals(connection.getMetaData().getDatabaseProductName())
                || !connection.isWrapperFor(PGConnection.class)) {
            return Encoding.NONE;
        }
        Map<String, String> types = new java.util.HashMap<>();
        try (PreparedStatement columns = connection.prepareStatement(
                "SELECT a.attname, t.typname FROM pg_attribute a JOIN pg_type t ON t.oid = a.atttypid "
                        + "WHERE a.attrelid = to_regclass(?) AND a.attnum > 0 AND NOT a.attisdropped")) {
            columns.setString(1, schema.domainEventTable());
            try (ResultSet result = columns.executeQuery()) {
                while (result.next()) {
                    types.put(result.getString(1).toLowerCase(Locale.ROOT), result.getString(2));
                }
            }
        }
        String[] strings = {schema.eventIdentifierColumn(), schema.aggregateIdentifierColumn(), schema.typeColumn(),
                schema.timestampColumn(), schema.payloadTypeColumn(), schema.payloadRevisionColumn()};
        for (String column : strings) {
            String type = types.get(column.toLowerCase(Locale.ROOT));
            if (!"varchar".equals(type) && !"text".equals(type)) {
                return Encoding.NONE;
            }
        }
        for (String column : new String[]{schema.payloadColumn(), schema.metaDataColumn()}) {
            if (!"bytea".equals(types.get(column.toLowerCase(Locale.ROOT)))) {
                return Encoding.NONE;
            }
        }
        String sequence = types.get(schema.sequenceNumberColumn().toLowerCase(Locale.ROOT));
        if ("int8".equals(sequence)) {
            return Encoding.LONG_SEQUENCE;
        }
        return "int4".equals(sequence) ? Encoding.INT_SEQUENCE : Encoding.NONE;
    }

    /** How the columns are copied: the sequence number's width; {@link #NONE} for Axon's own statement. */
    private enum Encoding {
        NONE(0), LONG_SEQUENCE(8), INT_SEQUENCE(4);

        final int sequenceBytes;

        Encoding(int sequenceBytes) {
            this.sequenceBytes = sequenceBytes;
        }
    }

    private static void text(ByteArrayOutputStream out, String value) {
        if (value == null) {
            intValue(out, -1);
            return;
        }
        bytes(out, value.getBytes(StandardCharsets.UTF_8));
    }

    private static void bytes(ByteArrayOutputStream out, byte[] value) {
        if (value == null) {
            intValue(out, -1);
            return;
        }
        intValue(out, value.length);
        out.write(value, 0, value.length);
    }

    private static void shortValue(ByteArrayOutputStream out, int value) {
        out.write(value >>> 8);
        out.write(value);
    }

    private static void intValue(ByteArrayOutputStream out, int value) {
        out.write(value >>> 24);
        out.write(value >>> 16);
        out.write(value >>> 8);
        out.write(value);
    }

    private static void longValue(ByteArrayOutputStream out, long value) {
        intValue(out, (int) (value >>> 32));
        intValue(out, (int) value);
    }

    /**
     * What the engine's {@link TimestampWriter} writes for a timestamp, read through a statement that only records a
     * string: null when the writer writes anything else.
     */
    private static final class TimestampText implements InvocationHandler {

        private final PreparedStatement recorder = (PreparedStatement) Proxy.newProxyInstance(
                PostgresCopyAppend.class.getClassLoader(), new Class<?>[]{PreparedStatement.class}, this);
        private String written;
        private boolean other;

        String of(TimestampWriter writer, Instant timestamp) throws SQLException {
            written = null;
            other = false;
            writer.writeTimestamp(recorder, 5, timestamp);
            return other ? null : written;
        }

        @Override
        public Object invoke(Object proxy, java.lang.reflect.Method method, Object[] args) {
            if (method.getName().equals("setString") && args != null && args.length == 2) {
                written = (String) args[1];
            } else {
                other = true;
            }
            return null;
        }
    }
}
