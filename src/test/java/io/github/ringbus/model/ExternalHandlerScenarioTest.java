package io.github.ringbus.model;

import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import io.github.ringbus.Topology;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * External command handlers (a plain object's {@code @CommandHandler} that uses aggregate repositories itself) on the
 * ring as on {@code SimpleCommandBus}: one that creates an aggregate and then sends commands to it in the same
 * command; one command class whose handler loads an aggregate of one type or another by its content; loads of an
 * aggregate that is not the command's named target.
 */
class ExternalHandlerScenarioTest extends OnTwins {

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Item.class))
                      .configureAggregate(AggregateConfigurer.defaultConfiguration(Box.class))
                      .registerCommandHandler(Handlers::new));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void anExternalHandlersCreationThenCommandsToTheCreatedAggregateAppendInOrder(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(new CreateAndTouch("i", 2), new Touch("i")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(twins.storedOnBoth("i").get(1)).isEqualTo(twins.storedOnBoth("i").get(0))
                                                  .extracting(ConfiguredTwins.Stored::sequenceNumber)
                                                  .containsExactly(0L, 1L, 2L, 3L);
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void oneCommandClassLoadingAggregatesOfTwoTypesFindsEachOfThem(Topology topology) {
        start(topology);
        List<Object> commands = new java.util.ArrayList<>();
        for (int i = 0; i < 6; i++) {
            commands.add(new CreateItem("item-" + i));
            commands.add(new CreateBox("box-" + i));
        }
        for (int round = 0; round < 3; round++) {
            for (int i = 0; i < 6; i++) {
                commands.add(new Mark(i % 2 == 0 ? "item-" + i : "box-" + i, i % 2 == 0));
                commands.add(new Mark(i % 2 == 0 ? "box-" + i : "item-" + i, i % 2 != 0));
            }
        }
        List<List<Outcome>> outcomes = twins.sendAll(commands);

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1)).noneMatch(Outcome::failed);
        for (int i = 0; i < 6; i++) {
            assertThat(twins.storedOnBoth("item-" + i).get(1)).isEqualTo(twins.storedOnBoth("item-" + i).get(0));
            assertThat(twins.storedOnBoth("box-" + i).get(1)).isEqualTo(twins.storedOnBoth("box-" + i).get(0));
        }
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aLoadOfAMissingAggregateOfEitherTypeFailsAsAggregateNotFound(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new CreateItem("item"), new Mark("item", true), new Mark("nothing", true),
                new Mark("nothing-either", false), new CreateBox("box"), new Mark("box", false),
                new Mark("box", false)));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void manyLoadsThatFindNothingDoNotHideAnAggregateThatExists(Topology topology) {
        start(topology);
        List<Object> commands = new java.util.ArrayList<>();
        commands.add(new CreateItem("there"));
        commands.add(new Mark("there", true)); // learn the route
        for (int i = 0; i < 40; i++) {
            commands.add(new Mark("missing-" + i, i % 3 == 0));
        }
        commands.add(new CreateItem("later"));
        commands.add(new CreateBox("late-box"));
        commands.add(new Mark("later", true));
        commands.add(new Mark("late-box", false));
        List<List<Outcome>> outcomes = twins.sendAll(commands);

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
    }

    @Test
    void onCompactALoadOfAnAggregateThatIsNotTheCommandsNamedTargetReadsTheRightAggregate() {
        start(Topology.COMPACT);
        List<Object> commands = new java.util.ArrayList<>();
        commands.add(new CreateItem("courier"));
        for (int i = 0; i < 10; i++) {
            commands.add(new CreateBox("order-" + i));
            commands.add(new Validate("order-" + i, "courier"));
        }
        List<List<Outcome>> outcomes = twins.sendAll(commands);

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1)).noneMatch(Outcome::failed);
        assertThat(twins.storedOnBoth("courier").get(1)).isEqualTo(twins.storedOnBoth("courier").get(0));
    }

    /** A known limit (design.md): on FULL another handler thread may own the aggregate, and the load says so. */
    @Test
    void onFullALoadOfAnAggregateThatIsNotTheCommandsNamedTargetFailsNamingTheWayOut() {
        start(Topology.FULL);
        twins.send(new CreateItem("courier"));
        twins.send(new CreateBox("order"));

        Outcome onRing = twins.send(new Validate("order", "courier"))[1];

        assertThat(onRing.failure()).isEqualTo(IllegalStateException.class);
        assertThat(onRing.message()).contains("loads aggregate [courier] of [Item]", "@TargetAggregateIdentifier",
                                              "COMPACT topology");
        assertThat(ConfiguredTwins.stored(twins.ringEngine, "courier")).hasSize(1);
    }

    record CreateAndTouch(String id, int touches) {
    }

    record CreateItem(@TargetAggregateIdentifier String id) {
    }

    record CreateBox(@TargetAggregateIdentifier String id) {
    }

    record Touch(@TargetAggregateIdentifier String id) {
    }

    /** Handled outside the aggregates: marks an item or a box, whichever the command says. */
    record Mark(@TargetAggregateIdentifier String id, boolean item) {
    }

    /** Names the order; its handler loads the courier (an item) and marks it. */
    record Validate(@TargetAggregateIdentifier String orderId, String courierId) {
    }

    record Created(String id) {
    }

    record Touched(String id) {
    }

    record Marked(String id) {
    }

    static class Handlers {

        private final Configuration configuration;

        Handlers(Configuration configuration) {
            this.configuration = configuration;
        }

        @CommandHandler
        int handle(CreateAndTouch command) throws Exception {
            configuration.repository(Item.class).newInstance(() -> new Item(command.id()));
            int touched = 0;
            for (int i = 0; i < command.touches(); i++) {
                touched = (Integer) configuration.commandGateway().sendAndWait(new Touch(command.id()));
            }
            return touched;
        }

        @CommandHandler
        String handle(Mark command) {
            if (command.item()) {
                return configuration.repository(Item.class).load(command.id())
                                    .invoke(item -> item.mark());
            }
            return configuration.repository(Box.class).load(command.id()).invoke(box -> box.mark());
        }

        @CommandHandler
        String handle(Validate command) {
            return configuration.repository(Item.class).load(command.courierId()).invoke(item -> item.mark());
        }
    }

    static class Item {

        @AggregateIdentifier
        private String id;
        private int touches;

        Item() {
        }

        Item(String id) {
            apply(new Created(id));
        }

        @CommandHandler
        Item(CreateItem command) {
            apply(new Created(command.id()));
        }

        @CommandHandler
        int handle(Touch command) {
            apply(new Touched(id));
            return touches;
        }

        String mark() {
            apply(new Marked(id));
            return "item " + id;
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Touched event) {
            touches++;
        }
    }

    static class Box {

        @AggregateIdentifier
        private String id;

        Box() {
        }

        @CommandHandler
        Box(CreateBox command) {
            apply(new Created(command.id()));
        }

        String mark() {
            apply(new Marked(id));
            return "box " + id;
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
        }
    }
}
