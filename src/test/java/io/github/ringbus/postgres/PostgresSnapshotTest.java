package io.github.ringbus.postgres;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.AggregateSnapshotter;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.Snapshotter;
import org.axonframework.serialization.Serializer;
import org.axonframework.serialization.json.JacksonSerializer;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Snapshots with Axon's {@link AggregateSnapshotter} on PostgreSQL: taken on the bus's snapshot thread, stored in
 * Axon's snapshot table, and used by a bus that starts with an empty cache.
 */
class PostgresSnapshotTest extends OnPostgres {

    /** Jackson reading and writing fields: the fixtures' aggregate has no getters, and snapshots serialize it. */
    private static final Serializer SERIALIZER = JacksonSerializer.builder()
            .objectMapper(new ObjectMapper().setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY))
            .build();

    /** Axon's snapshotter on the ring's own event store, noting the threads it is called on. */
    private static final class RecordingSnapshotter implements Snapshotter {

        final List<String> threads = new CopyOnWriteArrayList<>();
        volatile Snapshotter axon;

        @Override
        public void scheduleSnapshot(Class<?> aggregateType, String aggregateIdentifier) {
            threads.add(Thread.currentThread().getName());
            axon.scheduleSnapshot(aggregateType, aggregateIdentifier);
        }
    }

    private static PostgresRing ringWithSnapshots(RecordingSnapshotter snapshotter, int threshold) {
        PostgresRing ring = new PostgresRing(server, null, SERIALIZER, b -> b.snapshotter(snapshotter, threshold));
        snapshotter.axon = AggregateSnapshotter.builder()
                                               .eventStore(ring.eventStore)
                                               .aggregateFactories(new GenericAggregateFactory<>(Account.class))
                                               .transactionManager(ring.transactions)
                                               .build();
        return ring;
    }

    private static Optional<DomainEventMessage<?>> awaitStoredSnapshot(String aggregateId) throws Exception {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setUrl(server.jdbcUrl());
        var reader = PostgresServer.engine(new JdbcTransactionManager(dataSource), null, SERIALIZER);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Optional<DomainEventMessage<?>> snapshot = reader.readSnapshot(aggregateId);
        while (snapshot.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(20);
            snapshot = reader.readSnapshot(aggregateId);
        }
        return snapshot;
    }

    @Test
    void snapshotsAreTakenOnTheSnapshotThreadAndStoredInPostgres() throws Exception {
        RecordingSnapshotter snapshotter = new RecordingSnapshotter();
        try (PostgresRing ring = ringWithSnapshots(snapshotter, 5)) {
            ring.sendAndWait(new Open("snap"));
            for (int i = 1; i <= 9; i++) {
                assertThat(ring.sendAndWait(new Deposit("snap", i)).isExceptional()).isFalse();
            }

            Optional<DomainEventMessage<?>> snapshot = awaitStoredSnapshot("snap");

            assertThat(snapshot).as("a snapshot in PostgreSQL").isPresent();
            assertThat(snapshot.get().getSequenceNumber()).isGreaterThanOrEqualTo(4L);
            assertThat(snapshotter.threads).isNotEmpty().allMatch("ringbus-snapshot"::equals);
        }
    }

    @Test
    void aBusWithAnEmptyCacheLoadsTheSnapshotAndTheLaterEvents() throws Exception {
        try (PostgresRing ring = ringWithSnapshots(new RecordingSnapshotter(), 5)) {
            ring.sendAndWait(new Open("cold-snap"));
            for (int i = 1; i <= 7; i++) {
                ring.sendAndWait(new Deposit("cold-snap", i));
            }
            assertThat(awaitStoredSnapshot("cold-snap")).isPresent();
        }

        try (PostgresRing cold = new PostgresRing(server, null, SERIALIZER, b -> b)) {
            CommandResultMessage<Object> result = cold.sendAndWait(new Deposit("cold-snap", 100));

            assertThat(result.isExceptional()).as("%s", result.optionalExceptionResult()).isFalse();
            assertThat(result.getPayload()).isEqualTo(128L); // 1 + ... + 7, then 100
        }
    }
}
