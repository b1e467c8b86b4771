package io.github.ringbus.behaviour;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.Topology;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.CreationPolicy;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Axon 4's own {@code NestedUnitOfWorkTest.stagedEventsLoadInCorrectOrder} (axon-integrationtests), with only the
 * command bus swapped: commands sent and waited for from handlers, three deep, where the innermost plain command
 * fails after a command it sent changed an aggregate. Axon's nested Units of Work commit with their root, so that
 * change is rolled back with the failing command: neither the aggregate in memory nor the store keeps it.
 * <p>
 * On ringbus the waited-for commands run in place on the one handler thread of {@link Topology#COMPACT} (the only
 * shape where a handler may wait for another aggregate's command: see docs/design.md, "Known limits").
 */
class AxonNestedUnitOfWorkTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"SimpleCommandBus", "ringbus COMPACT", "ringbus COMPACT, Axon's repository"})
    void aFailedCommandTakesTheEventsOfTheCommandsItRanWithItAndTheStoreKeepsOnlyWhatSucceeded(String bus) {
        // Axon's test finds no configurer modules; ringbus's module gives aggregates the ring's repository, and
        // without it they keep Axon's EventSourcingRepository: both must hold.
        Configurer configurer = DefaultConfigurer.defaultConfiguration(!bus.endsWith("Axon's repository"))
                .configureAggregate(TestAggregate.class)
                .registerCommandHandler(c -> new Handler())
                .registerComponent(List.class, c -> new CopyOnWriteArrayList<>());
        if (bus.equals("SimpleCommandBus")) {
            configurer.configureEmbeddedEventStore(c -> new InMemoryEventStorageEngine());
        } else {
            configurer.configureEventStore(c -> RingEventStore.builder()
                                                              .storageEngine(new InMemoryEventStorageEngine())
                                                              .build())
                      .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore())
                                                              .topology(Topology.COMPACT).build());
        }
        Configuration config = configurer.buildConfiguration();
        config.start();
        try {
            CommandGateway gateway = config.commandGateway();
            gateway.sendAndWait(new Create("1"));
            gateway.sendAndWait(new Test1());
            gateway.sendAndWait(new ShowItems("1", "from-eventstore"));
        } finally {
            config.shutdown();
        }

        assertThat(config.getComponent(List.class)).containsExactly(
                "pre-rollback-first", "pre-rollback-second",
                "post-rollback-first", "post-rollback-second",
                "from-eventstore-first", "from-eventstore-second");
    }

    static class TestAggregate {

        @AggregateIdentifier
        String id;
        List<String> items = new ArrayList<>();

        private TestAggregate() {
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.ALWAYS)
        public void handle(Create cmd) {
            apply(cmd);
        }

        @EventSourcingHandler
        public void on(Create evt) {
            id = evt.id;
        }

        @CommandHandler
        public void handle(Add cmd, CommandGateway gw) {
            apply(cmd);
        }

        @EventSourcingHandler
        public void on(Add evt) {
            items.add(evt.item);
        }

        @CommandHandler
        public void handle(ShowItems cmd, List<String> order) {
            items.forEach(i -> order.add(cmd.message + "-" + i));
        }
    }

    record Create(@TargetAggregateIdentifier String id) {
    }

    record Add(@TargetAggregateIdentifier String id, String item) {
    }

    record ShowItems(@TargetAggregateIdentifier String id, String message) {
    }

    record Test1() {
    }

    record Test2() {
    }

    record Oops() {
    }

    static class Handler {

        @CommandHandler
        public void handle(Test1 cmd, CommandGateway gw) {
            gw.sendAndWait(new Add("1", "first"));
            gw.sendAndWait(new Test2());
        }

        @CommandHandler
        public void handle(Test2 cmd, CommandGateway gw) {
            gw.sendAndWait(new Add("1", "second"));
            gw.sendAndWait(new ShowItems("1", "pre-rollback"));
            assertThatThrownBy(() -> gw.sendAndWait(new Oops())).isInstanceOf(RuntimeException.class);
            gw.sendAndWait(new ShowItems("1", "post-rollback"));
        }

        @CommandHandler
        public void handle(Oops cmd, CommandGateway gw) {
            gw.sendAndWait(new Add("1", "third"));
            throw new RuntimeException("Oops");
        }
    }
}
