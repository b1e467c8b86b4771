package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.RingCommandBus;
import org.axonframework.modelling.command.Repository;
import io.github.ringbus.RingEventStore;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.deadline.GenericDeadlineMessage;
import org.axonframework.deadline.SimpleDeadlineManager;
import org.axonframework.deadline.annotation.DeadlineHandler;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.ScopeDescriptor;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.AggregateScopeDescriptor;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.saga.SagaScopeDescriptor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Deadlines on a bus built directly ({@code RingCommandBus.builder()}, {@code registerAggregate}), with Axon's
 * {@link SimpleDeadlineManager} given a scope-aware provider that lists the ring repository.
 */
class DeadlineOnRingBusTest {

    public record Hang(@TargetAggregateIdentifier String bellId) {
    }

    public record CountRings(@TargetAggregateIdentifier String bellId) {
    }

    public record Hung(String bellId) {
    }

    public record Rang(String bellId) {
    }

    /** A bell that rings when its deadline comes. */
    public static class Bell {

        @AggregateIdentifier
        private String id;
        private int rings;

        protected Bell() {
        }

        @CommandHandler
        public Bell(Hang command) {
            apply(new Hung(command.bellId()));
        }

        @CommandHandler
        public int handle(CountRings command) {
            return rings;
        }

        @DeadlineHandler(deadlineName = "ring")
        void ring() {
            apply(new Rang(id));
        }

        @EventSourcingHandler
        void on(Hung event) {
            this.id = event.bellId();
        }

        @EventSourcingHandler
        void on(Rang event) {
            this.rings++;
        }
    }

    private final InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
    private final EmbeddedEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
    private final RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).handlerThreads(1).build();
    private final Repository<Bell> repository = bus.registerAggregate(Bell.class);
    private final SimpleDeadlineManager deadlines = SimpleDeadlineManager.builder()
                                                                         .scopeAwareProvider(scope -> Stream.of(repository))
                                                                         .build();

    @AfterEach
    void shutDown() {
        deadlines.shutdown();
        bus.shutdown();
    }

    private Object sendAndWait(Object payload) {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(asCommandMessage(payload), callback);
        CommandResultMessage<?> result = callback.getResult(10, TimeUnit.SECONDS);
        if (result.isExceptional()) {
            throw new AssertionError("command failed", result.exceptionResult());
        }
        return result.getPayload();
    }

    private List<Object> stored(String id) {
        return engine.readEvents(id).asStream().map(EventMessage::getPayload).collect(Collectors.toList());
    }

    private static ScopeDescriptor bell(String id) {
        return new AggregateScopeDescriptor("Bell", id);
    }

    @Test
    void aDeadlineReachesTheAggregateThroughAScopeAwareProviderListingTheRingRepository() throws Exception {
        bus.start();
        sendAndWait(new Hang("b1"));

        deadlines.schedule(Duration.ofMillis(10), "ring", null, bell("b1"));

        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (stored("b1").size() < 2 && System.nanoTime() < until) {
            Thread.sleep(10);
        }
        assertThat(stored("b1")).containsExactly(new Hung("b1"), new Rang("b1"));
        assertThat(sendAndWait(new CountRings("b1"))).isEqualTo(1);
    }

    @Test
    void aDeliveredMessageWaitsForTheAggregatesCommandsAheadOfItInTheRing() throws Exception {
        bus.start();
        sendAndWait(new Hang("b2"));
        CountDownLatch release = new CountDownLatch(1);
        bus.subscribe(RingbusFixture.BLOCK, RingbusFixture.blockingHandler(release));
        FutureCallback<Object, Object> blocked = new FutureCallback<>();
        bus.dispatch(RingbusFixture.blockCommand("x"), blocked); // holds the only handler thread

        CompletableFuture<Void> sent = CompletableFuture.runAsync(() -> {
            try {
                repository.send(GenericDeadlineMessage.asDeadlineMessage("ring", null), bell("b2"));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        }, Executors.newSingleThreadExecutor());
        Thread.sleep(100);
        assertThat(sent).as("send waits while the command ahead of it runs").isNotDone();

        release.countDown();
        sent.get(10, TimeUnit.SECONDS);
        assertThat(blocked.isDone()).isTrue();
        assertThat(stored("b2")).containsExactly(new Hung("b2"), new Rang("b2"));
    }

    @Test
    void sendFromAPipelineThreadIsRefusedRatherThanWaitingForItself() {
        bus.start();
        sendAndWait(new Hang("b3"));
        bus.subscribe("send-from-handler", command -> {
            repository.send(GenericDeadlineMessage.asDeadlineMessage("ring", null), bell("b3"));
            return null;
        });

        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(new GenericCommandMessage<>(new GenericMessage<>("x"), "send-from-handler"), callback);
        CommandResultMessage<?> result = callback.getResult(10, TimeUnit.SECONDS);

        assertThat(result.isExceptional()).isTrue();
        assertThat(result.exceptionResult()).isInstanceOf(IllegalStateException.class)
                .hasMessageFindingMatch("pipeline thread \\[ringbus-(handle-0|preload-handle)\\]");
        assertThat(stored("b3")).containsExactly(new Hung("b3"));
    }

    @Test
    void sendToABusThatIsShutDownFailsWithTheBussReason() {
        bus.start();
        sendAndWait(new Hang("b4"));
        bus.shutdown();

        assertThatThrownBy(() -> repository.send(GenericDeadlineMessage.asDeadlineMessage("ring", null), bell("b4")))
                .isInstanceOf(ShutdownInProgressException.class);
    }

    @Test
    void canResolveAcceptsTheScopesAxonsRepositoryAccepts() {
        EventSourcingRepository<Bell> axons = EventSourcingRepository.builder(Bell.class).eventStore(eventStore)
                                                                     .build();
        for (ScopeDescriptor scope : List.of(bell("b5"), new AggregateScopeDescriptor(Bell.class.getName(), "b5"),
                                             new AggregateScopeDescriptor("Account", "b5"),
                                             new SagaScopeDescriptor("Bell", "b5"))) {
            assertThat(repository.canResolve(scope)).as("canResolve(%s)", scope).isEqualTo(axons.canResolve(scope));
        }
        assertThat(repository.canResolve(bell("b5"))).isTrue();
    }
}
