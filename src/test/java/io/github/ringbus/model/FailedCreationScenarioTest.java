package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.CreationPolicy;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * A creation that failed leaves no aggregate behind, in memory either: the next creation creates it, a
 * create-if-missing command creates it once and then finds it, and an aggregate another writer creates afterwards is
 * found by the next command, as on {@code SimpleCommandBus}, which reads the store at every command.
 */
class FailedCreationScenarioTest extends OnTwins {

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Seat.class)));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void afterARefusedCreationTheNextCreationCreatesAndCommandsFindIt(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Open("s", true), new Book("s"), new Open("s", false), new Book("s")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(twins.storedOnBoth("s").get(1)).isEqualTo(twins.storedOnBoth("s").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void afterAFailedCreateIfMissingTheNextCreatesOnceAndThenFindsTheAggregate(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Reserve("r", true), new Reserve("r", false), new Reserve("r", false), new Book("r")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).subList(1, 4)).noneMatch(Outcome::failed);
        assertThat(twins.storedOnBoth("r").get(1)).isEqualTo(twins.storedOnBoth("r").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void anAggregateAnotherWriterCreatesAfterARefusedCreationIsFound(Topology topology) {
        start(topology);
        twins.send(new Open("w", true));
        twins.send(new Book("w"));
        for (var engine : List.of(twins.axonEngine, twins.ringEngine)) {
            engine.appendEvents(new GenericDomainEventMessage<>("Seat", "w", 0, new Opened("w")));
        }

        List<List<Outcome>> outcomes = twins.sendAll(List.of(new Book("w"), new Book("w")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1)).noneMatch(Outcome::failed);
    }

    record Open(@TargetAggregateIdentifier String id, boolean refuse) {
    }

    record Reserve(@TargetAggregateIdentifier String id, boolean fail) {
    }

    record Book(@TargetAggregateIdentifier String id) {
    }

    record Opened(String id) {
    }

    record Booked(String id) {
    }

    static class Seat {

        @AggregateIdentifier
        private String id;
        private int bookings;

        Seat() {
        }

        @CommandHandler
        Seat(Open command) {
            if (command.refuse()) {
                throw new IllegalArgumentException("not yet");
            }
            apply(new Opened(command.id()));
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.CREATE_IF_MISSING)
        int handle(Reserve command) {
            if (id == null) {
                apply(new Opened(command.id()));
            }
            if (command.fail()) {
                throw new IllegalStateException("no reservations today");
            }
            apply(new Booked(command.id()));
            return bookings;
        }

        @CommandHandler
        int handle(Book command) {
            apply(new Booked(id));
            return bookings;
        }

        @EventSourcingHandler
        void on(Opened event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Booked event) {
            bookings++;
        }
    }
}
