package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.messaging.InterceptorChain;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.AggregateMember;
import org.axonframework.modelling.command.CommandHandlerInterceptor;
import org.axonframework.modelling.command.CreationPolicy;
import org.axonframework.modelling.command.EntityId;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * What an aggregate is made of, on the ring as on {@code SimpleCommandBus}: aggregate members (entities in a
 * collection with command handlers, commands forwarded by entity id, failures after an entity's {@code apply}),
 * creation policies ({@code ALWAYS}, {@code CREATE_IF_MISSING}, {@code NEVER}), command handler interceptors inside the
 * aggregate (one that refuses, one that applies before the handler), and events applied from an event sourcing handler
 * during a command (the order Axon publishes them in). On both topologies, one command at a time and all at once.
 */
class AggregateStructureScenarioTest extends OnTwins {

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Order.class)));
    }

    private static List<Object> program() {
        List<Object> commands = new ArrayList<>();
        commands.add(new Place("o1"));
        commands.add(new AddLine("o1", "l1", 2));
        commands.add(new AddLine("o1", "l2", 1));
        commands.add(new ChangeQuantity("o1", "l1", 5, false));
        commands.add(new ChangeQuantity("o1", "l2", 9, true));       // fails after the entity applied
        commands.add(new ChangeQuantity("o1", "missing", 1, false)); // no entity with that id
        commands.add(new Total("o1"));
        commands.add(new Note("o1", "locked"));                       // the interceptor refuses
        commands.add(new Note("o1", "hello"));                        // the interceptor applies first
        commands.add(new Ship("o1"));                                 // an event sourcing handler applies another
        commands.add(new Total("o1"));
        commands.add(new Upsert("o2", 3));                            // CREATE_IF_MISSING creates
        commands.add(new Upsert("o2", 4));                            // ... then finds it
        commands.add(new Reorder("o3"));                              // ALWAYS creates
        commands.add(new Reorder("o3"));                              // ALWAYS again: a second creation
        commands.add(new Cancel("o4"));                               // NEVER on a missing aggregate
        commands.add(new Cancel("o1"));
        commands.add(new Total("o1"));
        commands.add(new Total("o2"));
        return commands;
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void oneCommandAtATimeEveryCallerAndStreamIsAsOnSimpleCommandBus(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(withoutSecondAlways(program()));

        assertSame(outcomes);
        assertThat(outcomes.get(1).get(6).result()).as("l1 changed to 5, l2's failed change rolled back").isEqualTo(6);
        assertThat(outcomes.get(1).get(7).failed()).as("the interceptor refused").isTrue();
        assertThat(outcomes.get(1).get(10).result()).as("shipped").isEqualTo(1006);
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void allAtOnceEveryCallerAndStreamIsAsOnSimpleCommandBus(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAllAtOnce(withoutSecondAlways(program()));

        assertSame(outcomes);
    }

    /**
     * Axon's in-memory engine stores a second history for a second {@code ALWAYS} creation where ringbus refuses it
     * (a known difference, docs/design.md): left out.
     */
    private static List<Object> withoutSecondAlways(List<Object> commands) {
        List<Object> kept = new ArrayList<>(commands);
        kept.remove(14);
        return kept;
    }

    private void assertSame(List<List<Outcome>> outcomes) {
        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        for (String id : List.of("o1", "o2", "o3", "o4")) {
            assertThat(twins.storedOnBoth(id).get(1)).as("stream of %s", id).isEqualTo(twins.storedOnBoth(id).get(0));
        }
    }

    record Place(@TargetAggregateIdentifier String id) {
    }

    record AddLine(@TargetAggregateIdentifier String id, String lineId, int quantity) {
    }

    record ChangeQuantity(@TargetAggregateIdentifier String id, String lineId, int quantity, boolean failAfterwards) {
    }

    record Total(@TargetAggregateIdentifier String id) {
    }

    record Note(@TargetAggregateIdentifier String id, String text) {
    }

    record Ship(@TargetAggregateIdentifier String id) {
    }

    record Upsert(@TargetAggregateIdentifier String id, int quantity) {
    }

    record Reorder(@TargetAggregateIdentifier String id) {
    }

    record Cancel(@TargetAggregateIdentifier String id) {
    }

    record Placed(String id) {
    }

    record LineAdded(String lineId, int quantity) {
    }

    record QuantityChanged(String lineId, int quantity) {
    }

    record Noted(String text) {
    }

    record Audited(String what) {
    }

    record Shipped() {
    }

    record Invoiced() {
    }

    record Cancelled() {
    }

    static class Order {

        @AggregateIdentifier
        private String id;
        @AggregateMember
        private final List<Line> lines = new ArrayList<>();
        private boolean shipped;

        Order() {
        }

        @CommandHandler
        Order(Place command) {
            apply(new Placed(command.id()));
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.CREATE_IF_MISSING)
        int handle(Upsert command) {
            if (id == null) {
                apply(new Placed(command.id()));
            }
            apply(new LineAdded("u" + lines.size(), command.quantity()));
            return lines.size();
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.ALWAYS)
        String handle(Reorder command) {
            apply(new Placed(command.id()));
            return "reordered";
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.NEVER)
        void handle(Cancel command) {
            apply(new Cancelled());
        }

        @CommandHandler
        void handle(AddLine command) {
            apply(new LineAdded(command.lineId(), command.quantity()));
        }

        @CommandHandler
        int handle(Total command) {
            return lines.stream().mapToInt(l -> l.quantity).sum() + (shipped ? 1000 : 0);
        }

        @CommandHandler
        String handle(Note command) {
            apply(new Noted(command.text()));
            return command.text();
        }

        @CommandHandler
        void handle(Ship command) {
            apply(new Shipped());
        }

        @CommandHandlerInterceptor
        Object intercept(Note command, InterceptorChain chain) throws Exception {
            if (command.text().equals("locked")) {
                throw new IllegalStateException("notes are locked");
            }
            apply(new Audited("note"));
            return chain.proceed();
        }

        @EventSourcingHandler
        void on(Placed event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(LineAdded event) {
            lines.add(new Line(event.lineId(), event.quantity()));
        }

        @EventSourcingHandler
        void on(Shipped event) {
            shipped = true;
            // Applied from an event sourcing handler while the command runs (not while it is replayed).
            if (org.axonframework.modelling.command.AggregateLifecycle.isLive()) {
                apply(new Invoiced());
            }
        }
    }

    static class Line {

        @EntityId
        private final String lineId;
        private int quantity;

        Line(String lineId, int quantity) {
            this.lineId = lineId;
            this.quantity = quantity;
        }

        @CommandHandler
        void handle(ChangeQuantity command) {
            apply(new QuantityChanged(lineId, command.quantity()));
            if (command.failAfterwards()) {
                throw new IllegalArgumentException("too many");
            }
        }

        @EventSourcingHandler
        void on(QuantityChanged event) {
            if (event.lineId().equals(lineId)) {
                quantity = event.quantity();
            }
        }
    }
}
