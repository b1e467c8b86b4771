package io.github.ringbus.benchmarks.postgres;

import io.github.ringbus.benchmarks.Account;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.messaging.MetaData;
import org.axonframework.serialization.SerializedObject;
import org.axonframework.serialization.Serializer;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.ThreadParams;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Instant;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

/**
 * What bounds the durable path, measured without any bus: how many pre-serialized event rows the server stores per
 * second in Axon's own table ({@code DomainEventEntry}, with its indexes and unique key), in transactions of
 * {@value #ROWS_PER_COMMIT} rows (about what ringbus's group commit puts in one, from the server's counters), with
 * {@code fsync=on} and {@code synchronous_commit=on}, in each statement form a writer may use ({@code form}: pgjdbc's
 * rewritten multi-row VALUES, one INSERT of array parameters unnested, one binary COPY); and how many deposit events (payload and metadata) the
 * applications' serializer serializes per second on one thread. One operation is one event row (or one event
 * serialized).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms2g", "-Xmx2g"})
@Warmup(iterations = 2, time = 5)
@Measurement(iterations = 3, time = 10)
public class PostgresLimitBenchmark {

    /** Rows per transaction: ringbus's group commit stored about 700 events per commit in the durable benchmark. */
    static final int ROWS_PER_COMMIT = 700;

    private static final String COLUMNS = "DomainEventEntry (eventIdentifier, aggregateIdentifier, sequenceNumber, "
            + "type, timeStamp, payloadType, payloadRevision, payload, metaData)";
    /** One row's statement, batched: pgjdbc's {@code reWriteBatchedInserts} sends it as multi-row VALUES. */
    private static final String INSERT = "INSERT INTO " + COLUMNS + " VALUES (?,?,?,?,?,?,?,?,?)";
    /** One statement per transaction: a column's values as one array parameter each, unnested by the server. */
    private static final String INSERT_UNNEST = "INSERT INTO " + COLUMNS + " SELECT * FROM unnest(?::varchar[], "
            + "?::varchar[], ?::bigint[], ?::varchar[], ?::varchar[], ?::varchar[], ?::varchar[], ?::bytea[], "
            + "?::bytea[])";
    /** One binary COPY per transaction: rows in PostgreSQL's binary copy format, no statement parameters at all. */
    private static final String COPY = "COPY " + COLUMNS + " FROM STDIN (FORMAT binary)";

    /** The server, with Axon's event tables. */
    @State(Scope.Benchmark)
    public static class Server {

        /** The network's round trip between the writers and the server, added by a {@link DelayProxy}; 0: loopback. */
        @Param({"0"})
        public long rttMicros;

        /**
         * The statement form: {@code values} (a batch of one-row INSERTs, which pgjdbc's {@code reWriteBatchedInserts}
         * rewrites into multi-row VALUES statements, as Axon's JDBC engine appends), {@code unnest} (one INSERT of
         * nine array parameters) or {@code copy} (one binary COPY).
         */
        @Param({"values", "unnest", "copy"})
        public String form;

        DurablePostgres postgres;
        byte[] payload;
        byte[] metaData;
        String payloadType;

        @Setup(Level.Trial)
        public void start() {
            postgres = DurablePostgres.start(64, rttMicros);
            System.out.println("\n" + postgres.describe());
            Serializer serializer = DurablePostgres.serializer();
            SerializedObject<byte[]> serialized = serializer.serialize(new Account.Deposited("account-1", 1),
                                                                       byte[].class);
            payload = serialized.getData();
            payloadType = serialized.getType().getName();
            metaData = serializer.serialize(MetaData.emptyInstance(), byte[].class).getData();
        }

        @TearDown(Level.Trial)
        public void stop() {
            postgres.close();
        }
    }

    /** Each thread's own connection and aggregates, so that threads never conflict on a key. */
    @State(Scope.Thread)
    public static class Writer {

        Connection connection;
        PreparedStatement insert;
        String aggregatePrefix;
        long sequence;
        int aggregate;
        long rows;
        // The columns of one transaction's rows (unnest), and the copy's bytes (copy): reused.
        final String[] eventIds = new String[ROWS_PER_COMMIT];
        final String[] aggregateIds = new String[ROWS_PER_COMMIT];
        final Long[] sequences = new Long[ROWS_PER_COMMIT];
        final String[] types = new String[ROWS_PER_COMMIT];
        final String[] timestamps = new String[ROWS_PER_COMMIT];
        final String[] payloadTypes = new String[ROWS_PER_COMMIT];
        final String[] revisions = new String[ROWS_PER_COMMIT];
        final byte[][] payloads = new byte[ROWS_PER_COMMIT][];
        final byte[][] metaDatas = new byte[ROWS_PER_COMMIT][];
        final java.io.ByteArrayOutputStream copyBytes = new java.io.ByteArrayOutputStream(1 << 20);
        final java.io.DataOutputStream copyOut = new java.io.DataOutputStream(copyBytes);
        org.postgresql.copy.CopyManager copies;

        @Setup(Level.Trial)
        public void open(Server server, ThreadParams thread) throws SQLException {
            connection = server.postgres.dataSource().getConnection();
            connection.setAutoCommit(false);
            insert = connection.prepareStatement(server.form.equals("unnest") ? INSERT_UNNEST : INSERT);
            copies = connection.unwrap(org.postgresql.PGConnection.class).getCopyAPI();
            aggregatePrefix = "limit-" + thread.getThreadIndex() + "-" + UUID.randomUUID().toString().substring(0, 8) + "-";
        }

        @TearDown(Level.Trial)
        public void close() {
            try {
                insert.close();
                connection.close();
            } catch (SQLException | RuntimeException e) {
                // JMH may tear the server's state (and its pool) down first; the connection is gone with it.
            }
        }
    }

    /** One transaction of {@value #ROWS_PER_COMMIT} rows, committed durably, in the server's statement form. */
    private static void commitOneBatch(Server server, Writer writer) throws SQLException {
        switch (server.form) {
            case "values" -> commitValues(server, writer);
            case "unnest" -> commitUnnest(server, writer);
            case "copy" -> commitCopy(server, writer);
            default -> throw new IllegalArgumentException("No statement form [" + server.form
                                                          + "]: values, unnest or copy");
        }
    }

    /** The next row's aggregate and sequence number: a new aggregate every 50 events, as deposits spread. */
    private static void nextRow(Writer writer) {
        if (writer.sequence == 50) {
            writer.sequence = 0;
            writer.aggregate++;
        }
    }

    private static void commitUnnest(Server server, Writer writer) throws SQLException {
        String timestamp = Instant.now().toString();
        for (int i = 0; i < ROWS_PER_COMMIT; i++) {
            nextRow(writer);
            writer.eventIds[i] = writer.aggregatePrefix + "e" + writer.rows++;
            writer.aggregateIds[i] = writer.aggregatePrefix + writer.aggregate;
            writer.sequences[i] = writer.sequence++;
            writer.types[i] = "Account";
            writer.timestamps[i] = timestamp;
            writer.payloadTypes[i] = server.payloadType;
            writer.revisions[i] = null;
            writer.payloads[i] = server.payload;
            writer.metaDatas[i] = server.metaData;
        }
        Connection connection = writer.connection;
        PreparedStatement insert = writer.insert;
        insert.setArray(1, connection.createArrayOf("varchar", writer.eventIds));
        insert.setArray(2, connection.createArrayOf("varchar", writer.aggregateIds));
        insert.setArray(3, connection.createArrayOf("int8", writer.sequences));
        insert.setArray(4, connection.createArrayOf("varchar", writer.types));
        insert.setArray(5, connection.createArrayOf("varchar", writer.timestamps));
        insert.setArray(6, connection.createArrayOf("varchar", writer.payloadTypes));
        insert.setArray(7, connection.createArrayOf("varchar", writer.revisions));
        insert.setArray(8, connection.createArrayOf("bytea", writer.payloads));
        insert.setArray(9, connection.createArrayOf("bytea", writer.metaDatas));
        stored(insert.executeUpdate());
        connection.commit();
    }

    private static void commitCopy(Server server, Writer writer) throws SQLException {
        byte[] timestamp = Instant.now().toString().getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] type = "Account".getBytes(java.nio.charset.StandardCharsets.UTF_8);
        byte[] payloadType = server.payloadType.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        try {
            writer.copyBytes.reset();
            java.io.DataOutputStream out = writer.copyOut;
            out.writeBytes("PGCOPY\n");
            out.write(0xFF);
            out.writeBytes("\r\n");
            out.write(0);
            out.writeInt(0); // flags
            out.writeInt(0); // header extension length
            for (int i = 0; i < ROWS_PER_COMMIT; i++) {
                nextRow(writer);
                out.writeShort(9);
                text(out, (writer.aggregatePrefix + "e" + writer.rows++).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                text(out, (writer.aggregatePrefix + writer.aggregate).getBytes(java.nio.charset.StandardCharsets.UTF_8));
                out.writeInt(8);
                out.writeLong(writer.sequence++);
                text(out, type);
                text(out, timestamp);
                text(out, payloadType);
                out.writeInt(-1); // payloadRevision: null
                text(out, server.payload);
                text(out, server.metaData);
            }
            out.writeShort(-1);
            out.flush();
            stored(writer.copies.copyIn(COPY, new java.io.ByteArrayInputStream(writer.copyBytes.toByteArray())));
        } catch (java.io.IOException e) {
            throw new SQLException("The copy's bytes could not be written", e);
        }
        writer.connection.commit();
    }

    /** A form that stored fewer rows than it was given would measure nothing: it fails the benchmark instead. */
    private static void stored(long rows) throws SQLException {
        if (rows != ROWS_PER_COMMIT) {
            throw new SQLException("The statement stored " + rows + " rows of " + ROWS_PER_COMMIT);
        }
    }

    /** A field of the binary copy format: its length, then its bytes. */
    private static void text(java.io.DataOutputStream out, byte[] bytes) throws java.io.IOException {
        out.writeInt(bytes.length);
        out.write(bytes);
    }

    private static void commitValues(Server server, Writer writer) throws SQLException {
        String timestamp = Instant.now().toString();
        for (int i = 0; i < ROWS_PER_COMMIT; i++) {
            nextRow(writer);
            PreparedStatement insert = writer.insert;
            // Unique, 36-odd characters like a UUID, without the cost of a random UUID per row (the bus makes its
            // identifiers on the handler threads, not on the store's path).
            insert.setString(1, writer.aggregatePrefix + "e" + writer.rows++);
            insert.setString(2, writer.aggregatePrefix + writer.aggregate);
            insert.setLong(3, writer.sequence++);
            insert.setString(4, "Account");
            insert.setString(5, timestamp);
            insert.setString(6, server.payloadType);
            insert.setString(7, null);
            insert.setBytes(8, server.payload);
            insert.setBytes(9, server.metaData);
            insert.addBatch();
        }
        writer.insert.executeBatch();
        writer.connection.commit();
    }

    /** Rows stored per second from one connection. */
    @Benchmark
    @Threads(1)
    @OperationsPerInvocation(ROWS_PER_COMMIT)
    public void oneConnection(Server server, Writer writer) throws SQLException {
        commitOneBatch(server, writer);
    }

    /** Rows stored per second from eight connections at once. */
    @Benchmark
    @Threads(8)
    @OperationsPerInvocation(ROWS_PER_COMMIT)
    public void eightConnections(Server server, Writer writer) throws SQLException {
        commitOneBatch(server, writer);
    }

    /** Rows stored per second from four connections at once: ringbus's four store threads, the default on 16 cores. */
    @Benchmark
    @Threads(4)
    @OperationsPerInvocation(ROWS_PER_COMMIT)
    public void fourConnections(Server server, Writer writer) throws SQLException {
        commitOneBatch(server, writer);
    }

    /** Rows stored per second from 64 connections at once: SimpleCommandBus's callers at 64 dispatchers. */
    @Benchmark
    @Threads(64)
    @OperationsPerInvocation(ROWS_PER_COMMIT)
    public void sixtyFourConnections(Server server, Writer writer) throws SQLException {
        commitOneBatch(server, writer);
    }

    /** The applications' serializer on one thread: a deposit event's payload and metadata per operation. */
    @State(Scope.Thread)
    public static class Serialization {

        final Serializer serializer = DurablePostgres.serializer();
        long amount;
    }

    /** Deposit events serialized per second (payload and metadata) on one thread; each a new event message, as
     * serialization is kept per message (so identifier generation is included). */
    @Benchmark
    @Threads(1)
    @Fork(value = 1)
    public Object serializer(Serialization serialization) {
        GenericDomainEventMessage<Account.Deposited> event = new GenericDomainEventMessage<>(
                "Account", "account-1", serialization.amount, new Account.Deposited("account-1",
                                                                                    serialization.amount++));
        SerializedObject<byte[]> payload = event.serializePayload(serialization.serializer, byte[].class);
        SerializedObject<byte[]> metaData = event.serializeMetaData(serialization.serializer, byte[].class);
        return payload.getData().length + metaData.getData().length;
    }
}
