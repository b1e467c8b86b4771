package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.Vehicles.BuildCar;
import io.github.ringbus.fixtures.Vehicles.BuildTruck;
import io.github.ringbus.fixtures.Vehicles.Car;
import io.github.ringbus.fixtures.Vehicles.Drive;
import io.github.ringbus.fixtures.Vehicles.LoadTruck;
import io.github.ringbus.fixtures.Vehicles.Odometer;
import io.github.ringbus.fixtures.Vehicles.Tons;
import io.github.ringbus.fixtures.Vehicles.Truck;
import io.github.ringbus.fixtures.Vehicles.Vehicle;
import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.EventCountSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.serialization.Serializer;
import org.axonframework.serialization.json.JacksonSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Axon's polymorphic aggregates with snapshots (an abstract root with subtypes, {@code withSubtypes}, and an event
 * count snapshot trigger), on ringbus as on {@code SimpleCommandBus}, both built from one Axon configuration on a
 * real PostgreSQL with Axon's JDBC engine, whose snapshots are serialized (JSON): a snapshot of a subtype is read back
 * as that subtype, with its own state, by a ring whose cache holds one aggregate (so that every other command reads its
 * aggregate from its snapshot and the events after it) and by a fresh application on the same database.
 */
class PolymorphicSnapshotScenarioTest extends OnPostgres {

    private static final Serializer SERIALIZER = JacksonSerializer.builder().objectMapper(
            new ObjectMapper().setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY)).build();

    private final List<AutoCloseable> closing = new ArrayList<>();

    @AfterEach
    void shutDown() throws Exception {
        for (int i = closing.size() - 1; i >= 0; i--) {
            closing.get(i).close();
        }
    }

    private Configuration start(boolean ring) {
        HikariDataSource pool = server.pool(4);
        closing.add(pool);
        // No outage here: a busy machine may take more than the fixture's second to open a connection.
        pool.setConnectionTimeout(30_000);
        JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
        JdbcEventStorageEngine engine = JdbcEventStorageEngine.builder()
                                                              .connectionProvider(transactions.connectionProvider())
                                                              .transactionManager(transactions)
                                                              .eventSerializer(SERIALIZER)
                                                              .snapshotSerializer(SERIALIZER)
                                                              .build();
        Configurer configurer = DefaultConfigurer.defaultConfiguration()
                .configureTransactionManager(c -> transactions)
                .configureSerializer(c -> SERIALIZER)
                .configureEventStore(c -> ring ? RingEventStore.builder().storageEngine(engine).build()
                        : EmbeddedEventStore.builder().storageEngine(engine).build())
                .configureAggregate(AggregateConfigurer.defaultConfiguration(Vehicle.class)
                                                       .withSubtypes(Car.class, Truck.class)
                                                       .configureSnapshotTrigger(c -> new EventCountSnapshotTriggerDefinition(
                                                               c.snapshotter(), 3)));
        if (ring) {
            configurer.configureCommandBus(c -> RingCommandBus.builder().axonConfiguration(c).cacheSize(1).build());
        }
        Configuration configuration = configurer.start();
        closing.add(configuration::shutdown);
        return configuration;
    }

    private static Object send(Configuration application, Object command) {
        try {
            Object result = application.commandGateway().send(command).get(30, TimeUnit.SECONDS);
            // A creation answers with its identifier, which differs between the twins by its prefix.
            return result instanceof String identifier ? identifier.substring(identifier.indexOf('-') + 1) : result;
        } catch (java.util.concurrent.ExecutionException failure) {
            return failure.getCause().getClass();
        } catch (Exception e) {
            throw new AssertionError(command + " was not answered", e);
        }
    }

    /** The vehicle's program, its identifiers prefixed: a car and a truck, one's commands between the other's. */
    private static List<Object> program(String prefix) {
        String car = prefix + "car";
        String truck = prefix + "truck";
        List<Object> program = new ArrayList<>(List.of(new BuildCar(car), new BuildTruck(truck)));
        for (int i = 1; i <= 8; i++) {
            program.add(new Drive(car, i, i % 4 == 0));
            program.add(new LoadTruck(truck, i, i % 3 == 0));
            program.add(new Odometer(car));
            program.add(new Odometer(truck));
        }
        program.add(new Tons(truck));
        return program;
    }

    private static Optional<String> snapshotType(Configuration application, String identifier) {
        return application.eventStore().readEvents(identifier).asStream().findFirst()
                          .filter(first -> first.getSequenceNumber() > 0)
                          .map(DomainEventMessage::getType);
    }

    @Test
    void aSubtypesSnapshotIsReadBackAsThatSubtypeWithItsStateByEveryRead() throws Exception {
        Configuration onAxon = start(false);
        Configuration onRing = start(true);

        List<Object> axonAnswers = new ArrayList<>();
        List<Object> ringAnswers = new ArrayList<>();
        for (Object command : program("a-")) {
            axonAnswers.add(send(onAxon, command));
        }
        for (Object command : program("r-")) {
            ringAnswers.add(send(onRing, command));
        }

        assertThat(ringAnswers).isEqualTo(axonAnswers);
        assertThat(axonAnswers.get(axonAnswers.size() - 1)).isEqualTo(27L); // 1+2+4+5+7+8 tons
        // Both took snapshots, of the subtype (the ring takes them off its pipeline, a moment later).
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (snapshotType(onRing, "r-truck").isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertThat(snapshotType(onAxon, "a-truck")).isPresent();
        assertThat(snapshotType(onRing, "r-truck")).isEqualTo(snapshotType(onAxon, "a-truck"));
        assertThat(snapshotType(onRing, "r-car")).isEqualTo(snapshotType(onAxon, "a-car")).isPresent();

        // A fresh application on the same database reads each from its snapshot.
        Configuration freshRing = start(true);
        Configuration freshAxon = start(false);
        for (String vehicle : List.of("car", "truck")) {
            assertThat(send(freshRing, new Odometer("r-" + vehicle)))
                    .isEqualTo(send(freshAxon, new Odometer("a-" + vehicle)));
        }
        assertThat(send(freshRing, new Tons("r-truck"))).isEqualTo(send(freshAxon, new Tons("a-truck")))
                                                       .isEqualTo(27L);
        assertThat(send(freshRing, new LoadTruck("r-truck", 1, false)))
                .isEqualTo(send(freshAxon, new LoadTruck("a-truck", 1, false)));
    }
}
