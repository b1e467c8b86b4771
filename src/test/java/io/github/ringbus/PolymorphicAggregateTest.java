package io.github.ringbus;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;
import static org.axonframework.modelling.command.AggregateLifecycle.createNew;

/**
 * A polymorphic aggregate hierarchy ({@code AggregateConfigurer.withSubtypes}) runs on the ring with the model Axon
 * built for it: commands of every subtype reach their handlers, and a subtype's handler can create an aggregate of
 * another subtype with {@code createNew}.
 */
class PolymorphicAggregateTest {

    private final InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
    private Configuration configuration;

    @AfterEach
    void shutDown() {
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    private CommandGateway start() {
        configuration = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                .configureAggregate(AggregateConfigurer.defaultConfiguration(Vehicle.class)
                                                       .withSubtypes(Car.class, Truck.class))
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .start();
        return configuration.commandGateway();
    }

    @Test
    void theHierarchyRunsOnARingRepository() {
        start();

        assertThat(configuration.repository(Vehicle.class)).isInstanceOf(RingRepository.class);
    }

    @Test
    void commandsOfEverySubtypeReachTheirHandlers() {
        CommandGateway gateway = start();
        gateway.sendAndWait(new BuildCar("car"));
        gateway.sendAndWait(new BuildTruck("truck"));

        Object carKm = gateway.sendAndWait(new Drive("car", 10));
        Object truckKm = gateway.sendAndWait(new Drive("truck", 3));
        gateway.sendAndWait(new Load("truck", 7));

        assertThat(carKm).isEqualTo(10L);
        assertThat(truckKm).isEqualTo(3L);
        assertThat(payloads("truck")).containsExactly(new TruckBuilt("truck"), new Driven("truck", 3),
                                                      new Loaded("truck", 7));
    }

    @Test
    void aSubtypesHandlerCreatesAnAggregateOfAnotherSubtype() {
        CommandGateway gateway = start();
        gateway.sendAndWait(new BuildCar("car"));

        gateway.sendAndWait(new CallTowTruck("car", "tow"));
        gateway.sendAndWait(new Load("tow", 1));

        assertThat(payloads("car")).containsExactly(new CarBuilt("car"), new TowTruckCalled("car", "tow"));
        assertThat(payloads("tow")).containsExactly(new TruckBuilt("tow"), new Loaded("tow", 1));
    }

    private List<Object> payloads(String aggregateId) {
        return engine.readEvents(aggregateId).asStream().map(DomainEventMessage::getPayload)
                     .collect(Collectors.toList());
    }

    record BuildCar(@TargetAggregateIdentifier String id) {
    }

    record BuildTruck(@TargetAggregateIdentifier String id) {
    }

    record Drive(@TargetAggregateIdentifier String id, long km) {
    }

    record Load(@TargetAggregateIdentifier String id, long tons) {
    }

    record CallTowTruck(@TargetAggregateIdentifier String carId, String truckId) {
    }

    record CarBuilt(String id) {
    }

    record TruckBuilt(String id) {
    }

    record Driven(String id, long km) {
    }

    record Loaded(String id, long tons) {
    }

    record TowTruckCalled(String carId, String truckId) {
    }

    /** The root of the hierarchy: what every vehicle does. */
    abstract static class Vehicle {

        @AggregateIdentifier
        protected String id;
        private long km;

        @CommandHandler
        long handle(Drive command) {
            apply(new Driven(id, command.km()));
            return km;
        }

        @EventSourcingHandler
        void on(Driven event) {
            this.km += event.km();
        }
    }

    static class Car extends Vehicle {

        Car() {
        }

        @CommandHandler
        Car(BuildCar command) {
            apply(new CarBuilt(command.id()));
        }

        @CommandHandler
        void handle(CallTowTruck command) throws Exception {
            apply(new TowTruckCalled(id, command.truckId()));
            createNew(Truck.class, () -> new Truck(command.truckId()));
        }

        @EventSourcingHandler
        void on(CarBuilt event) {
            this.id = event.id();
        }
    }

    static class Truck extends Vehicle {

        private long load;

        Truck() {
        }

        Truck(String id) {
            apply(new TruckBuilt(id));
        }

        @CommandHandler
        Truck(BuildTruck command) {
            this(command.id());
        }

        @CommandHandler
        long handle(Load command) {
            apply(new Loaded(id, command.tons()));
            return load;
        }

        @EventSourcingHandler
        void on(TruckBuilt event) {
            this.id = event.id();
        }

        @EventSourcingHandler
        void on(Loaded event) {
            this.load += event.tons();
        }
    }
}
