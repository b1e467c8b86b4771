package io.github.ringbus.examples.polymorphic;

import io.github.ringbus.examples.RingAndSimpleApplications;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A state-stored polymorphic aggregate (JPA entities, Axon's {@code GenericJpaRepository}) on ringbus as on Axon's
 * {@code SimpleCommandBus}, each in a Spring Boot application of its own on a real PostgreSQL: the root's command and
 * a subtype's own command, each also failing after it changed the entity and applied its event, give the same
 * answers, leave the same rows and store the same events. (In this Spring Boot configuration Axon's own bus answers
 * a command declared only on a subtype of a state-stored aggregate with {@code NoHandlerForCommandException}; so does
 * ringbus.)
 */
class StateStoredPolymorphicAggregateTest {

    private static RingAndSimpleApplications applications;
    private static ConfigurableApplicationContext ring;
    private static ConfigurableApplicationContext simple;

    @BeforeAll
    static void startBothApplications() {
        applications = RingAndSimpleApplications.start(Garage.class);
        ring = applications.ring;
        simple = applications.simple;
    }

    @AfterAll
    static void stopBothApplications() {
        if (applications != null) {
            applications.close();
        }
    }

    private record Run(List<Object> answers, List<Map<String, Object>> rows, List<String> stored) {
    }

    private static Run run(ConfigurableApplicationContext application, List<Object> commands) {
        CommandGateway gateway = application.getBean(CommandGateway.class);
        List<Object> answers = new ArrayList<>();
        for (Object command : commands) {
            try {
                answers.add(gateway.send(command).get(30, TimeUnit.SECONDS));
            } catch (Exception failure) {
                Throwable cause = failure.getCause() == null ? failure : failure.getCause();
                answers.add(cause.getClass());
            }
        }
        JdbcTemplate jdbc = application.getBean(JdbcTemplate.class);
        return new Run(answers,
                       jdbc.queryForList("SELECT vehicle_id, kind, km, tons FROM state_stored_vehicle "
                                                 + "ORDER BY vehicle_id"),
                       jdbc.queryForList("SELECT payload_type FROM domain_event_entry ORDER BY global_index",
                                         String.class).stream()
                           .map(type -> type.substring(type.lastIndexOf('$') + 1)).toList());
    }

    @Test
    void theRootsCommandsAndASubtypesOwnRunOnEveryKindAsOnSimpleCommandBus() {
        List<Object> commands = List.of(
                new Car.BuildCar("car"), new Truck.BuildTruck("truck"),
                new Vehicle.Drive("car", 10, false), new Vehicle.Drive("truck", 5, false),
                new Truck.LoadTruck("truck", 3, false), new Vehicle.Drive("car", 100, true),
                new Truck.LoadTruck("truck", 50, true), new Truck.LoadTruck("car", 1, false),
                new Vehicle.Drive("truck", 1, false), new Truck.LoadTruck("truck", 4, false),
                new Vehicle.Odometer("car"), new Vehicle.Odometer("truck"));

        Run onSimpleCommandBus = run(simple, commands);
        Run onRingbus = run(ring, commands);

        assertThat(onRingbus).as("on SimpleCommandBus: %s", onSimpleCommandBus).isEqualTo(onSimpleCommandBus);
        // The root's commands on both kinds; the failed drive left the car's row and events as they were.
        assertThat(onSimpleCommandBus.answers().subList(2, 4)).containsExactly(10L, 5L);
        assertThat(onSimpleCommandBus.answers().get(5)).isEqualTo(IllegalArgumentException.class);
        assertThat(onSimpleCommandBus.answers().subList(10, 12)).containsExactly(10L, 6L);
    }
}
