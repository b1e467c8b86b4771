package io.github.ringbus.behaviour;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.annotation.ClasspathHandlerDefinition;
import org.axonframework.messaging.annotation.ClasspathParameterResolverFactory;
import org.axonframework.messaging.annotation.FixedValueParameterResolver;
import org.axonframework.messaging.annotation.MultiParameterResolverFactory;
import org.axonframework.messaging.annotation.ParameterResolverFactory;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * An application that builds its aggregates' repositories by hand, as with Axon's
 * {@code DisruptorCommandBus.createRepository(eventStore, aggregateFactory, parameterResolverFactory, ...)}: the ring
 * makes aggregate roots with its factory and resolves handler parameters with its resolvers.
 */
class HandBuiltRepositoryTest {

    record OpenLedger(@TargetAggregateIdentifier String id) {
    }

    record Book(@TargetAggregateIdentifier String id, long amount) {
    }

    record LedgerOpened(String id) {
    }

    record Booked(String id, long amount) {
    }

    /** A value only the application's own parameter resolver supplies. */
    record Rate(long value) {
    }

    static class Ledger {

        @AggregateIdentifier
        private String id;
        private long total;

        Ledger() {
        }

        @CommandHandler
        Ledger(OpenLedger command) {
            apply(new LedgerOpened(command.id()));
        }

        @CommandHandler
        long handle(Book command, Rate rate) {
            apply(new Booked(id, command.amount() * rate.value()));
            return total;
        }

        @EventSourcingHandler
        void on(LedgerOpened event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Booked event) {
            total += event.amount();
        }
    }

    private final RingEventStore eventStore =
            RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();

    @Test
    void handlerParametersAreResolvedByTheGivenResolversAndRootsMadeByTheGivenFactory() {
        AtomicInteger rootsMade = new AtomicInteger();
        RingCommandBus first = handBuiltBus(rootsMade);
        assertThat(send(first, new OpenLedger("l-1")).isExceptional()).isFalse();
        assertThat(send(first, new Book("l-1", 2)).getPayload()).as("2 at the rate of 3").isEqualTo(6L);
        first.shutdown();

        // A bus that has never seen the ledger reads it from the store: through the application's factory.
        RingCommandBus second = handBuiltBus(rootsMade);
        try {
            assertThat(send(second, new Book("l-1", 1)).getPayload()).isEqualTo(9L);
            assertThat(rootsMade).as("aggregate roots the application's factory made").hasValue(1);
        } finally {
            second.shutdown();
        }
    }

    private RingCommandBus handBuiltBus(AtomicInteger rootsMade) {
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).build();
        AggregateFactory<Ledger> counting = new AggregateFactory<>() {
            @Override
            public Ledger createAggregateRoot(String aggregateIdentifier, DomainEventMessage<?> firstEvent) {
                rootsMade.incrementAndGet();
                return new Ledger();
            }

            @Override
            public Class<Ledger> getAggregateType() {
                return Ledger.class;
            }
        };
        ParameterResolverFactory rates = (executable, parameters, index) ->
                parameters[index].getType() == Rate.class ? new FixedValueParameterResolver<>(new Rate(3)) : null;
        bus.registerAggregate(Ledger.class, counting,
                              MultiParameterResolverFactory.ordered(
                                      rates, ClasspathParameterResolverFactory.forClass(Ledger.class)),
                              ClasspathHandlerDefinition.forClass(Ledger.class));
        bus.start();
        return bus;
    }

    private static CommandResultMessage<?> send(RingCommandBus bus, Object command) {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(asCommandMessage(command), callback);
        return callback.getResult();
    }
}
