package io.github.ringbus.model;

import io.github.ringbus.fixtures.Vehicles.BuildCar;
import io.github.ringbus.fixtures.Vehicles.BuildTruck;
import io.github.ringbus.fixtures.Vehicles.Car;
import io.github.ringbus.fixtures.Vehicles.Drive;
import io.github.ringbus.fixtures.Vehicles.LoadTruck;
import io.github.ringbus.fixtures.Vehicles.Odometer;
import io.github.ringbus.fixtures.Vehicles.Truck;
import io.github.ringbus.fixtures.Vehicles.Vehicle;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.config.AggregateConfigurer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Axon's polymorphic aggregates (an abstract root with subtypes, {@code AggregateConfigurer.withSubtypes}) on the ring
 * as on {@code SimpleCommandBus}: a subtype's events carry the subtype's type name, and a command of a subtype that
 * fails after {@code apply} leaves nothing of what it applied, neither in memory nor in the store.
 */
class PolymorphicAggregateScenarioTest {

    private final ConfiguredTwins twins = new ConfiguredTwins(
            c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Vehicle.class)
                                                         .withSubtypes(Car.class, Truck.class)));

    @AfterEach
    void close() {
        twins.close();
    }

    @Test
    void aFailedCommandOfTheRootsHandlerOnASubtypeKeepsNothingItApplied() {
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new BuildCar("car"), new Drive("car", 1, false), new Drive("car", 100, true),
                new Drive("car", 10, false), new Odometer("car")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(4).result()).isEqualTo(11L);
        assertThat(twins.storedOnBoth("car").get(1)).isEqualTo(twins.storedOnBoth("car").get(0));
    }

    @Test
    void aFailedCommandOfASubtypesOwnHandlerKeepsNothingItApplied() {
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new BuildTruck("truck"), new LoadTruck("truck", 3, false), new LoadTruck("truck", 50, true),
                new LoadTruck("truck", 4, false), new Odometer("truck"), new Drive("truck", 2, true),
                new LoadTruck("truck", 1, false)));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(6).result()).isEqualTo(8L);
        assertThat(twins.storedOnBoth("truck").get(1)).isEqualTo(twins.storedOnBoth("truck").get(0));
    }

    @Test
    void aSubtypesEventsCarryTheSubtypesTypeNameAtConsecutiveSequenceNumbers() {
        twins.sendAll(List.of(new BuildCar("c"), new Drive("c", 1, true), new Drive("c", 2, false),
                              new Drive("c", 3, true), new Drive("c", 4, false)));

        List<ConfiguredTwins.Stored> onRing = twins.storedOnBoth("c").get(1);
        assertThat(onRing).extracting(ConfiguredTwins.Stored::type).containsOnly("Car");
        assertThat(onRing).extracting(ConfiguredTwins.Stored::sequenceNumber).containsExactly(0L, 1L, 2L);
    }
}
