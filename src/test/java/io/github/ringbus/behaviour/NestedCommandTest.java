package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.behaviour.Relay.Add;
import io.github.ringbus.behaviour.Relay.AddAroundNested;
import io.github.ringbus.behaviour.Relay.AddThenFail;
import io.github.ringbus.behaviour.Relay.Added;
import io.github.ringbus.behaviour.Relay.Create;
import io.github.ringbus.behaviour.Relay.Created;
import io.github.ringbus.behaviour.Relay.SendWithoutWaiting;
import io.github.ringbus.behaviour.Relay.WaitCatching;
import io.github.ringbus.PipelineWaitException;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessageHandler;
import org.axonframework.eventhandling.SimpleEventHandlerInvoker;
import org.axonframework.eventhandling.SubscribingEventProcessor;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.MessageHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.ThrowingSupplier;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A command sent from inside a handler, a callback or a subscribing event handler, and waited for. A callback runs
 * off the pipeline (on the callback thread) and may wait for any command. On Axon's
 * SimpleCommandBus it runs at once on the caller's thread, in a nested Unit of Work. On ringbus it runs in place when
 * that is safe (a plain handler's command; on a handler thread, a command for the aggregate the current command
 * targets, and on the one handler thread of {@code COMPACT} a command for another aggregate:
 * {@link WaitingForAnotherAggregateTest}); any other command dispatched from a pipeline thread cannot complete while
 * that thread waits, so waiting for it fails at once with a {@link PipelineWaitException}, and it is not dispatched.
 * Sending without waiting always works. Nothing ever hangs: every scenario runs under a timeout.
 */
class NestedCommandTest {

    private static final Duration NO_HANG = Duration.ofSeconds(10);
    private static final String ECHO = "echo";

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        Relay.gateway = null;
        if (ring != null) {
            ring.close();
        }
    }

    private CommandGateway startRing(Function<RingbusFixture, RingbusFixture> setup) {
        ring = setup.apply(RingbusFixture.started());
        return relayOn(ring.bus);
    }

    private static CommandGateway relayOn(CommandBus bus) {
        bus.registerHandlerInterceptor((unitOfWork, chain) -> chain.proceed()); // interceptors apply to nested too
        if (bus instanceof io.github.ringbus.RingCommandBus) {
            ((io.github.ringbus.RingCommandBus) bus).registerAggregate(Relay.class);
        }
        bus.subscribe(ECHO, echoHandler());
        CommandGateway gateway = DefaultCommandGateway.builder().commandBus(bus).build();
        Relay.gateway = gateway;
        return gateway;
    }

    /** A plain handler: returns its payload and the name of the thread it ran on. */
    private static MessageHandler<CommandMessage<?>> echoHandler() {
        return command -> command.getPayload() + "@" + Thread.currentThread().getName();
    }

    private static CommandMessage<Object> echo(String payload) {
        return new GenericCommandMessage<>(new GenericMessage<>(payload), ECHO);
    }

    private static <T> T noHang(ThrowingSupplier<T> scenario) {
        return assertTimeoutPreemptively(NO_HANG, scenario, "a nested command hung");
    }

    // --- in place on a handler thread --------------------------------------------------------------------------------

    @Test
    void aHandlerWaitingForACommandOfItsOwnAggregateGetsItsResultAndAllEventsAreStoredInOrder() {
        CommandGateway gateway = startRing(r -> r);

        Object result = noHang(() -> {
            gateway.sendAndWait(new Create("r"));
            return gateway.sendAndWait(new AddAroundNested("r", 1, new Add("r", 2), 3));
        });

        assertThat(result).isEqualTo(List.of(1L, 2L));
        List<Object> expected = List.of(new Created("r"), new Added("r", 1), new Added("r", 2), new Added("r", 3));
        assertThat(ring.storedPayloads("r")).isEqualTo(expected);
        assertThat(ring.storedSequenceNumbers("r")).containsExactly(0L, 1L, 2L, 3L);
        assertThat(onSimpleCommandBus(g -> {
            g.sendAndWait(new Create("r"));
            return g.sendAndWait(new AddAroundNested("r", 1, new Add("r", 2), 3));
        })).isEqualTo(new SimpleOutcome(List.of(1L, 2L), expected));
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("r", 4)))).containsExactly(1L, 2L, 3L, 4L);
    }

    @Test
    void aHandlerWaitingForAPlainHandlersCommandGetsItsResultOnItsOwnThread() {
        CommandGateway gateway = startRing(r -> r);

        Object result = noHang(() -> {
            gateway.sendAndWait(new Create("r"));
            return gateway.sendAndWait(new WaitCatching("r", echo("hello")));
        });

        assertThat(result).asString().startsWith("hello@ringbus-").matches(r -> StageThreads.handles(r.substring(6)));
    }

    @Test
    void eventsAPlainHandlerRunInPlacePublishesAreStoredWithTheOuterCommand() {
        CommandGateway gateway = startRing(r -> r);
        ring.bus.subscribe(PUBLISH, publishingHandler(false));

        noHang(() -> {
            gateway.sendAndWait(new Create("r"));
            return gateway.sendAndWait(new WaitCatching("r", publish("audit")));
        });

        assertThat(ring.allStoredPayloads()).containsExactly(new Created("r"), "audit");
        assertThat(ring.engine.storingThreads()).allMatch(StageThreads::stores);
    }

    @Test
    void eventsAPlainHandlerRunInPlacePublishesBeforeItFailsAreDiscardedWithItsUnitOfWork() {
        CommandGateway gateway = startRing(r -> r);
        ring.bus.subscribe(PUBLISH, publishingHandler(true));

        Object caught = noHang(() -> {
            gateway.sendAndWait(new Create("r"));
            return gateway.sendAndWait(new WaitCatching("r", publish("audit")));
        });

        assertThat(caught).isInstanceOf(IllegalStateException.class);
        assertThat(ring.allStoredPayloads()).containsExactly(new Created("r"));
    }

    private static final String PUBLISH = "publish";

    private static CommandMessage<Object> publish(String payload) {
        return new GenericCommandMessage<>(new GenericMessage<>(payload), PUBLISH);
    }

    /** A plain handler that publishes its payload as an event on the ring's event store, then fails if told to. */
    private MessageHandler<CommandMessage<?>> publishingHandler(boolean thenFail) {
        return command -> {
            ring.eventStore.publish(org.axonframework.eventhandling.GenericEventMessage.asEventMessage(
                    command.getPayload()));
            if (thenFail) {
                throw new IllegalStateException("fails after publishing, on purpose");
            }
            return null;
        };
    }

    @Test
    void aNestedCommandOfTheSameAggregateThatFailsAfterApplyingFailsTheOuterCommandAndLeavesNoTrace() {
        CommandGateway gateway = startRing(r -> r);
        noHang(() -> gateway.sendAndWait(new Create("r")));

        Throwable failure = noHang(() -> {
            try {
                gateway.sendAndWait(new WaitCatching("r", new AddThenFail("r", 7)));
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });

        assertThat(failure).as("the outer command fails, though its handler caught the nested failure")
                           .isNotNull().hasMessageContaining("fails after adding 7");
        assertThat(ring.storedPayloads("r")).containsExactly(new Created("r"));
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("r", 1)))).containsExactly(1L);
        assertThat(ring.storedPayloads("r")).containsExactly(new Created("r"), new Added("r", 1));
    }

    @Test
    void aHandlerMaySendAnotherAggregatesCommandWithoutWaiting() throws Exception {
        CommandGateway gateway = startRing(r -> r);

        noHang(() -> {
            gateway.sendAndWait(new Create("r"));
            gateway.sendAndWait(new Create("other"));
            return gateway.sendAndWait(new SendWithoutWaiting("r", new Add("other", 5)));
        });

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (ring.storedPayloads("other").size() < 2 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"), new Added("other", 5));
    }

    // --- callbacks: the callback thread; a function chained onto a bare FutureCallback: the complete stage ------

    @Test
    void aCallbackWaitingForAPlainHandlersCommandGetsItsResult() {
        CommandGateway gateway = startRing(r -> r);

        Object result = noHang(() -> onCreatedCallback(() -> gateway.sendAndWait(echo("from callback"))));

        assertThat(result).asString().startsWith("from callback@");
    }

    @Test
    void aCallbackWaitingForAnAggregatesCommandGetsItsResult() {
        CommandGateway gateway = startRing(r -> r);

        Object result = noHang(() -> onCreatedCallback(() -> gateway.sendAndWait(new Add("r", 1))));

        assertThat(result).isNotInstanceOf(Throwable.class);
        assertThat(ring.storedPayloads("r")).containsExactly(new Created("r"), new Added("r", 1));
    }

    /**
     * A function chained onto a bare {@code FutureCallback} before it completes runs where it completes, on the
     * complete stage's thread (that callback only wakes a waiting thread, so ringbus completes it there): a wait in
     * it for an aggregate's command is refused at once, as on any pipeline thread.
     */
    @Test
    void aFunctionChainedOntoABareFutureCallbackWaitingForAnAggregatesCommandFailsAtOnce() {
        CommandGateway gateway = startRing(r -> r);

        Object result = noHang(() -> {
            org.axonframework.commandhandling.callbacks.FutureCallback<Object, Object> created =
                    new org.axonframework.commandhandling.callbacks.FutureCallback<>();
            CompletableFuture<Object> chained = created.thenApply(r -> {
                try {
                    return gateway.sendAndWait(new Add("r", 1));
                } catch (RuntimeException e) {
                    return e;
                }
            });
            ring.bus.dispatch(org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage(
                    new Create("r")), created);
            return chained.get(5, TimeUnit.SECONDS);
        });

        assertThat(result).isInstanceOf(PipelineWaitException.class);
        assertThat(((Throwable) result).getMessage()).containsPattern("ringbus-(store-)?complete");
        assertThat(ring.storedPayloads("r")).containsExactly(new Created("r"));
    }

    /**
     * Dispatches {@code Create("r")} with a callback that runs the action, so that the action surely runs as a
     * callback (a continuation of a future that already completed would run on the test's thread); returns what the
     * action returned or threw.
     */
    private Object onCreatedCallback(java.util.function.Supplier<Object> action) throws Exception {
        CompletableFuture<Object> outcome = new CompletableFuture<>();
        ring.bus.dispatch(org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage(new Create("r")),
                          (command, created) -> {
                              try {
                                  outcome.complete(action.get());
                              } catch (RuntimeException e) {
                                  outcome.complete(e);
                              }
                          });
        return outcome.get(5, TimeUnit.SECONDS);
    }

    // --- subscribing event handlers: the publish stage, or the store stage on a plain EmbeddedEventStore ---------

    @Test
    void aSubscribingEventHandlerWaitingForCommandsNeverHangsOnARingEventStore() {
        // By default (PublishMode.IN_TRANSACTION) subscribers run on the store stage, inside its transaction.
        assertSubscribingHandlerWaits(RingbusFixture.started(), "ringbus-store(-complete)?");
    }

    @Test
    void aSubscribingEventHandlerWaitingForCommandsNeverHangsOnThePublishStage() {
        assertSubscribingHandlerWaits(
                RingbusFixture.started(b -> b.publishMode(io.github.ringbus.PublishMode.PARALLEL)),
                "ringbus-(publish|store-complete)");
    }

    @Test
    void aSubscribingEventHandlerWaitingForCommandsNeverHangsOnAPlainEmbeddedEventStore() {
        assertSubscribingHandlerWaits(RingbusFixture.startedOnEmbeddedEventStore(), "ringbus-store(-complete)?");
    }

    /**
     * On the first Created event, the handler waits for a plain command (runs in place) and for an aggregate's
     * command (refused at once).
     */
    private void assertSubscribingHandlerWaits(RingbusFixture started, String threadPattern) {
        ring = started;
        CommandGateway gateway = relayOn(ring.bus);
        CompletableFuture<Object> plain = new CompletableFuture<>();
        CompletableFuture<Object> aggregate = new CompletableFuture<>();
        EventMessageHandler handler = event -> {
            if (event.getPayload() instanceof Created && !plain.isDone()) {
                plain.complete(gateway.sendAndWait(echo("from event handler")));
                try {
                    aggregate.complete(gateway.sendAndWait(new Add("r", 1)));
                } catch (RuntimeException e) {
                    aggregate.complete(e);
                }
            }
            return null;
        };
        SubscribingEventProcessor processor = SubscribingEventProcessor.builder()
                .name("waiting")
                .eventHandlerInvoker(SimpleEventHandlerInvoker.builder().eventHandlers(handler).build())
                .messageSource(ring.eventStore)
                .build();
        processor.start();
        try {
            noHang(() -> gateway.sendAndWait(new Create("r")));
            assertThat(noHang(() -> plain.get(5, TimeUnit.SECONDS))).asString()
                    .matches("from event handler@" + threadPattern);
            Object refused = noHang(() -> aggregate.get(5, TimeUnit.SECONDS));
            assertThat(refused).isInstanceOf(PipelineWaitException.class);
            assertThat(((Throwable) refused).getMessage()).containsPattern("\\[" + threadPattern + "\\]");
            ring.assertStillHandlesValidCommands();
        } finally {
            processor.shutDown();
        }
    }

    // --- the same scenarios on Axon's SimpleCommandBus ----------------------------------------------------------

    record SimpleOutcome(Object result, List<Object> stored) {
    }

    private static SimpleOutcome onSimpleCommandBus(Function<CommandGateway, Object> scenario) {
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        try {
            SimpleCommandBus bus = Relay.onSimpleCommandBus(store);
            CommandGateway previous = Relay.gateway;
            CommandGateway gateway = relayOn(bus);
            try {
                Object result = scenario.apply(gateway);
                List<Object> stored = store.readEvents("r").asStream().map(DomainEventMessage::getPayload)
                                           .collect(Collectors.toList());
                return new SimpleOutcome(result, stored);
            } finally {
                Relay.gateway = previous;
            }
        } finally {
            store.shutDown();
        }
    }

}
