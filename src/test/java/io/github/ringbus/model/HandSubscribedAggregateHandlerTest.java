package io.github.ringbus.model;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.Topology;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Axon's {@code AggregateAnnotationCommandHandler} over Axon's own {@code EventSourcingRepository}, subscribed to the
 * ring by hand (no Axon configuration, as Axon's own repository tests do): its commands run whole on the handler
 * thread that owns the aggregate, as on {@code SimpleCommandBus}, with the repository's lock taken and released on
 * that thread, so one aggregate's commands follow one another without waiting on a lock its thread does not hold.
 */
class HandSubscribedAggregateHandlerTest {

    private RingCommandBus ring;
    private EventStore ringStore;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.shutdown();
        }
    }

    private static <B extends CommandBus> B subscribe(B bus, EventStore store) {
        AggregateAnnotationCommandHandler.<Counter>builder()
                                         .aggregateType(Counter.class)
                                         .repository(EventSourcingRepository.builder(Counter.class)
                                                                            .eventStore(store).build())
                                         .build()
                                         .subscribe(bus);
        return bus;
    }

    private static List<String> run(CommandBus bus, List<Object> commands) throws Exception {
        List<CompletableFuture<CommandResultMessage<?>>> results = new ArrayList<>();
        for (Object command : commands) {
            FutureCallback<Object, Object> callback = new FutureCallback<>();
            bus.dispatch(asCommandMessage(command), callback);
            results.add(callback.thenApply(r -> (CommandResultMessage<?>) r));
        }
        List<String> outcomes = new ArrayList<>();
        for (CompletableFuture<CommandResultMessage<?>> result : results) {
            CommandResultMessage<?> answer = result.get(10, TimeUnit.SECONDS);
            outcomes.add(answer.isExceptional() ? answer.exceptionResult().getClass().getSimpleName()
                                 : String.valueOf(answer.getPayload()));
        }
        return outcomes;
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void oneAggregatesCommandsRunOneAfterAnotherAsOnSimpleCommandBus(Topology topology) throws Exception {
        List<Object> commands = new ArrayList<>();
        commands.add(new Start("a"));
        commands.add(new Start("b"));
        for (int i = 0; i < 20; i++) {
            commands.add(new Add(i % 3 == 0 ? "b" : "a", i, i % 7 == 6));
        }
        EmbeddedEventStore axonStore = EmbeddedEventStore.builder()
                                                         .storageEngine(new InMemoryEventStorageEngine()).build();
        List<String> onAxon = run(subscribe(SimpleCommandBus.builder().build(), axonStore), commands);

        ringStore = RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        RingCommandBus.Builder builder = RingCommandBus.builder().eventStore(ringStore).topology(topology);
        ring = topology == Topology.FULL ? builder.handlerThreads(2).build()
                : builder.handlerThreads(1).storeThreads(1).build();
        subscribe(ring, ringStore);
        ring.start();
        long began = System.nanoTime();
        List<String> onRing = run(ring, commands);

        assertThat(onRing).isEqualTo(onAxon);
        assertThat(payloads(ringStore, "a")).isEqualTo(payloads(axonStore, "a"));
        assertThat(payloads(ringStore, "b")).isEqualTo(payloads(axonStore, "b"));
        // Not a speed: the lock the repository took on one thread and released on another made the next command of
        // the aggregate wait out the lock's 30 s (PessimisticLockFactory) before; the run is far below that.
        assertThat(Duration.ofNanos(System.nanoTime() - began)).isLessThan(Duration.ofSeconds(10));
    }

    private static List<Object> payloads(EventStore store, String id) {
        return store.readEvents(id).asStream().map(DomainEventMessage::getPayload).collect(Collectors.toList());
    }

    record Start(@TargetAggregateIdentifier String id) {
    }

    record Add(@TargetAggregateIdentifier String id, int amount, boolean fail) {
    }

    record Started(String id) {
    }

    record Added(int amount) {
    }

    static class Counter {

        @AggregateIdentifier
        private String id;
        private int total;

        Counter() {
        }

        @CommandHandler
        Counter(Start command) {
            apply(new Started(command.id()));
        }

        @CommandHandler
        int handle(Add command) {
            apply(new Added(command.amount()));
            if (command.fail()) {
                throw new IllegalStateException("refused after apply");
            }
            return total;
        }

        @EventSourcingHandler
        void on(Started event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Added event) {
            total += event.amount();
        }
    }
}
