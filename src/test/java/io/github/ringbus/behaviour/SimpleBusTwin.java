package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Tally;
import io.github.ringbus.fixtures.Account;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitor;

import java.util.concurrent.atomic.AtomicReference;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * The reference: Axon's own {@link SimpleCommandBus} with the same aggregates as {@link RingbusFixture} ({@link Account}
 * and {@link Tally}), each on an {@link EventSourcingRepository} over Axon's in-memory engine, so that a test can run
 * one scenario on both buses and compare what the caller sees.
 */
final class SimpleBusTwin implements AutoCloseable {

    final EmbeddedEventStore eventStore;
    final SimpleCommandBus bus;

    SimpleBusTwin() {
        this(NoOpMessageMonitor.INSTANCE);
    }

    SimpleBusTwin(MessageMonitor<? super CommandMessage<?>> monitor) {
        this(SimpleCommandBus.builder().messageMonitor(monitor).build());
    }

    /** The twin on a SimpleCommandBus built by the test (with a span factory, say). */
    SimpleBusTwin(SimpleCommandBus bus) {
        this(bus, new InMemoryEventStorageEngine());
    }

    /** The twin storing through the given engine (one that refuses some events, say). */
    SimpleBusTwin(EventStorageEngine engine) {
        this(SimpleCommandBus.builder().build(), engine);
    }

    private SimpleBusTwin(SimpleCommandBus bus, EventStorageEngine engine) {
        this.bus = bus;
        this.eventStore = EmbeddedEventStore.builder().storageEngine(engine).build();
        register(Account.class);
        register(Tally.class);
    }

    private <A> void register(Class<A> type) {
        AggregateAnnotationCommandHandler.<A>builder()
                                         .aggregateType(type)
                                         .repository(EventSourcingRepository.builder(type)
                                                                             .eventStore(eventStore)
                                                                             .build())
                                         .build()
                                         .subscribe(bus);
    }

    SimpleBusTwin subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        bus.subscribe(commandName, handler);
        return this;
    }

    SimpleBusTwin handlerInterceptor(MessageHandlerInterceptor<? super CommandMessage<?>> interceptor) {
        bus.registerHandlerInterceptor(interceptor);
        return this;
    }

    /** Dispatches the payload as a command named after its class; the bus is synchronous: returns the result. */
    CommandResultMessage<?> send(Object payload) {
        return send(asCommandMessage(payload));
    }

    /** Dispatches the command; the bus is synchronous: returns the result its callback received. */
    CommandResultMessage<?> send(CommandMessage<?> command) {
        AtomicReference<CommandResultMessage<?>> result = new AtomicReference<>();
        bus.dispatch(command, (c, r) -> result.set(r));
        if (result.get() == null) {
            throw new AssertionError("SimpleCommandBus did not call the callback of " + command);
        }
        return result.get();
    }

    @Override
    public void close() {
        eventStore.shutDown();
    }
}
