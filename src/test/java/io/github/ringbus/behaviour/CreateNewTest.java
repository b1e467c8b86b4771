package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;
import static org.axonframework.modelling.command.AggregateLifecycle.createNew;

/**
 * {@code AggregateLifecycle.createNew} from a command handler: the new aggregate's events are stored with the
 * creating command's, in the same append, and vanish with a failed command; later commands find the new aggregate.
 */
class CreateNewTest {

    private final FaultyStorageEngine engine = new FaultyStorageEngine();
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
                .configureAggregate(Portfolio.class)
                .configureAggregate(Position.class)
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).handlerThreads(2)
                                                        .build())
                .start();
        return configuration.commandGateway();
    }

    @Test
    void theCreatedAggregatesEventsAreStoredInTheSameAppendAsTheCreatingCommands() {
        CommandGateway gateway = start();
        gateway.sendAndWait(new OpenPortfolio("pf"));

        gateway.sendAndWait(new OpenPosition("pf", "pos", false));

        assertThat(payloads("pos")).containsExactly(new PositionOpened("pos", "pf"));
        assertThat(sequenceNumbers("pos")).containsExactly(0L);
        assertThat(payloads("pf")).containsExactly(new PortfolioOpened("pf"), new PositionRequested("pf", "pos"));
        assertThat(engine.storedAppends()).contains(List.of(new PositionRequested("pf", "pos"),
                                                    new PositionOpened("pos", "pf")));
    }

    @Test
    void laterCommandsFindTheCreatedAggregate() {
        CommandGateway gateway = start();
        gateway.sendAndWait(new OpenPortfolio("pf"));
        gateway.sendAndWait(new OpenPosition("pf", "pos", false));

        gateway.sendAndWait(new Buy("pos", 5));
        Object quantity = gateway.sendAndWait(new Buy("pos", 2));

        assertThat(quantity).isEqualTo(7L);
        assertThat(sequenceNumbers("pos")).containsExactly(0L, 1L, 2L);
    }

    @Test
    void aCommandThatFailsAfterCreateNewStoresNothingOfTheAggregateItCreated() {
        CommandGateway gateway = start();
        gateway.sendAndWait(new OpenPortfolio("pf"));

        assertThatThrownBy(() -> gateway.sendAndWait(new OpenPosition("pf", "pos", true)))
                .hasMessageContaining("fails after createNew on purpose");

        assertThat(payloads("pos")).isEmpty();
        assertThat(payloads("pf")).containsExactly(new PortfolioOpened("pf"));
        assertThatThrownBy(() -> gateway.sendAndWait(new Buy("pos", 1)))
                .isInstanceOf(AggregateNotFoundException.class);
    }

    @Test
    void theCreatingAggregateIsRestoredWithoutTheCreatedAggregatesEventsAfterAFailure() {
        CommandGateway gateway = start();
        gateway.sendAndWait(new OpenPortfolio("pf"));
        gateway.sendAndWait(new OpenPosition("pf", "pos-1", false));
        assertThatThrownBy(() -> gateway.sendAndWait(new OpenPosition("pf", "pos-2", true)))
                .hasMessageContaining("fails after createNew on purpose");

        Object positions = gateway.sendAndWait(new CountPositions("pf"));

        assertThat(positions).isEqualTo(1);
        assertThat(sequenceNumbers("pf")).containsExactly(0L, 1L);
    }

    @Test
    void anAggregateRegisteredWithoutAnAxonConfigurationCanCreateAnother() {
        RingEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).build();
        bus.registerAggregate(Portfolio.class);
        bus.registerAggregate(Position.class);
        bus.start();
        try {
            CommandGateway gateway = org.axonframework.commandhandling.gateway.DefaultCommandGateway
                    .builder().commandBus(bus).build();
            gateway.sendAndWait(new OpenPortfolio("pf"));

            gateway.sendAndWait(new OpenPosition("pf", "pos", false));

            assertThat(gateway.<Object>sendAndWait(new Buy("pos", 4))).isEqualTo(4L);
        } finally {
            bus.shutdown();
        }
    }

    private List<Object> payloads(String aggregateId) {
        return engine.readEvents(aggregateId).asStream().map(DomainEventMessage::getPayload)
                     .collect(Collectors.toList());
    }

    private List<Long> sequenceNumbers(String aggregateId) {
        return engine.readEvents(aggregateId).asStream().map(DomainEventMessage::getSequenceNumber)
                     .collect(Collectors.toList());
    }

    // --- fixtures ---------------------------------------------------------------------------------------------------

    record OpenPortfolio(@TargetAggregateIdentifier String portfolioId) {
    }

    record OpenPosition(@TargetAggregateIdentifier String portfolioId, String positionId, boolean failAfter) {
    }

    record CountPositions(@TargetAggregateIdentifier String portfolioId) {
    }

    record Buy(@TargetAggregateIdentifier String positionId, long quantity) {
    }

    record PortfolioOpened(String portfolioId) {
    }

    record PositionRequested(String portfolioId, String positionId) {
    }

    record PositionOpened(String positionId, String portfolioId) {
    }

    record Bought(String positionId, long quantity) {
    }

    /** Creates a {@link Position} with {@code createNew} for every position it opens. */
    static class Portfolio {

        @AggregateIdentifier
        private String id;
        private int positions;

        Portfolio() {
        }

        @CommandHandler
        Portfolio(OpenPortfolio command) {
            apply(new PortfolioOpened(command.portfolioId()));
        }

        @CommandHandler
        void handle(OpenPosition command) throws Exception {
            apply(new PositionRequested(id, command.positionId()));
            createNew(Position.class, () -> new Position(command.positionId(), id));
            if (command.failAfter()) {
                throw new IllegalStateException("OpenPosition fails after createNew on purpose");
            }
        }

        @CommandHandler
        int handle(CountPositions command) {
            return positions;
        }

        @EventSourcingHandler
        void on(PortfolioOpened event) {
            this.id = event.portfolioId();
        }

        @EventSourcingHandler
        void on(PositionRequested event) {
            this.positions++;
        }
    }

    /** Created only by a {@link Portfolio}. */
    static class Position {

        @AggregateIdentifier
        private String id;
        private long quantity;

        Position() {
        }

        Position(String id, String portfolioId) {
            apply(new PositionOpened(id, portfolioId));
        }

        @CommandHandler
        long handle(Buy command) {
            apply(new Bought(id, command.quantity()));
            return quantity;
        }

        @EventSourcingHandler
        void on(PositionOpened event) {
            this.id = event.positionId();
        }

        @EventSourcingHandler
        void on(Bought event) {
            this.quantity += event.quantity();
        }
    }
}
