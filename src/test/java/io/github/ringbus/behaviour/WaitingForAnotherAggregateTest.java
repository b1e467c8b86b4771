package io.github.ringbus.behaviour;

import io.github.ringbus.PipelineWaitException;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.Topology;
import io.github.ringbus.behaviour.Relay.Add;
import io.github.ringbus.behaviour.Relay.AddAroundNested;
import io.github.ringbus.behaviour.Relay.AddThenFail;
import io.github.ringbus.behaviour.Relay.AddWaitThenFail;
import io.github.ringbus.behaviour.Relay.Added;
import io.github.ringbus.behaviour.Relay.Create;
import io.github.ringbus.behaviour.Relay.Created;
import io.github.ringbus.behaviour.Relay.SendThenWait;
import io.github.ringbus.behaviour.Relay.WaitCatching;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.fixtures.RingbusFixture;
import org.assertj.core.api.InstanceOfAssertFactories;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.ThrowingSupplier;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * A command handler that sends a command to another aggregate and waits for it. On SimpleCommandBus the nested
 * command runs at once, on the handler's thread, in a Unit of Work nested in the handler's: its events are committed
 * with the outer command's, or discarded with them. On ringbus's {@code COMPACT} topology (one handler thread that
 * also preloads, so it owns every aggregate) the nested command runs in place the same way, on the aggregate as the
 * ring has it, unless a command for that aggregate dispatched earlier is still ahead of it in the ring; elsewhere it
 * is refused at once with a {@link PipelineWaitException} that says why. Each scenario is compared with
 * SimpleCommandBus where both run it.
 */
class WaitingForAnotherAggregateTest {

    private static final Duration NO_HANG = Duration.ofSeconds(10);

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        Relay.gateway = null;
        if (ring != null) {
            ring.close();
        }
    }

    private CommandGateway startRing(Topology topology) {
        ring = RingbusFixture.started(b -> b.topology(topology).handlerThreads(1));
        ((RingCommandBus) ring.bus).registerAggregate(Relay.class);
        return gatewayOn(ring.bus);
    }

    private static CommandGateway gatewayOn(CommandBus bus) {
        CommandGateway gateway = DefaultCommandGateway.builder().commandBus(bus).build();
        Relay.gateway = gateway;
        return gateway;
    }

    private static <T> T noHang(ThrowingSupplier<T> scenario) {
        return assertTimeoutPreemptively(NO_HANG, scenario, "a nested command hung");
    }

    /** Creates both relays, runs the scenario and returns what its last command returned, or the failure it threw. */
    private static Object scenario(CommandGateway gateway, Function<CommandGateway, Object> commands) {
        gateway.sendAndWait(new Create("r"));
        gateway.sendAndWait(new Create("other"));
        try {
            return commands.apply(gateway);
        } catch (RuntimeException e) {
            return e;
        }
    }

    @Test
    void onOneHandlerThreadTheNestedCommandRunsInPlaceAndBothAggregatesEventsAreStoredAsOnSimpleCommandBus() {
        CommandGateway gateway = startRing(Topology.COMPACT);
        Function<CommandGateway, Object> commands = g -> g.sendAndWait(
                new AddAroundNested("r", 1, new Add("other", 5), 3));

        Object result = noHang(() -> scenario(gateway, commands));

        assertThat(result).isEqualTo(List.of(5L));
        assertThat(ring.storedPayloads("r")).containsExactly(new Created("r"), new Added("r", 1), new Added("r", 3));
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"), new Added("other", 5));
        assertThat(ring.storedSequenceNumbers("other")).containsExactly(0L, 1L);
        assertThat(onSimpleCommandBus(commands))
                .isEqualTo(new Outcome(result, Map.of("r", ring.storedPayloads("r"),
                                                      "other", ring.storedPayloads("other"))));
    }

    @Test
    void theOtherAggregatesNextCommandSeesTheNestedCommandsEvents() {
        CommandGateway gateway = startRing(Topology.COMPACT);
        noHang(() -> scenario(gateway, g -> g.sendAndWait(new AddAroundNested("r", 1, new Add("other", 5), 3))));

        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("other", 6)))).containsExactly(5L, 6L);
        assertThat(ring.storedSequenceNumbers("other")).containsExactly(0L, 1L, 2L);
    }

    @Test
    void anOuterCommandThatFailsAfterItsNestedCommandSucceededDiscardsBothAggregatesEventsAsOnSimpleCommandBus() {
        CommandGateway gateway = startRing(Topology.COMPACT);
        Function<CommandGateway, Object> commands = g -> g.sendAndWait(
                new AddWaitThenFail("r", 1, new Add("other", 5)));

        Object failure = noHang(() -> scenario(gateway, commands));

        assertThat(failure).isInstanceOf(IllegalStateException.class);
        assertThat((Throwable) failure).hasMessageContaining("fails after its nested command");
        assertThat(ring.storedPayloads("r")).containsExactly(new Created("r"));
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"));
        assertThat(onSimpleCommandBus(commands).stored())
                .isEqualTo(Map.of("r", List.of(new Created("r")), "other", List.of(new Created("other"))));
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("other", 6))))
                .as("the other aggregate, restored to its state before the nested command").containsExactly(6L);
    }

    @Test
    void aNestedCommandThatFailsDiscardsOnlyItsOwnEventsAndTheOuterCommandGoesOn() {
        CommandGateway gateway = startRing(Topology.COMPACT);
        Function<CommandGateway, Object> commands = g -> g.sendAndWait(
                new WaitCatching("r", new AddThenFail("other", 7)));

        Object caught = noHang(() -> scenario(gateway, commands));

        assertThat(caught).isInstanceOf(IllegalStateException.class);
        assertThat((Throwable) caught).hasMessageContaining("fails after adding 7");
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"));
        assertThat(onSimpleCommandBus(commands).stored().get("other")).containsExactly(new Created("other"));
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("other", 8)))).containsExactly(8L);
    }

    @Test
    void aNestedCommandIsRefusedWhenACommandOfItsAggregateDispatchedBeforeItIsStillAheadInTheRing()
            throws InterruptedException {
        CommandGateway gateway = startRing(Topology.COMPACT);

        Object refused = noHang(() -> scenario(gateway, g -> g.sendAndWait(
                new SendThenWait("r", new Add("other", 5), new Add("other", 6)))));

        assertThat(refused).isInstanceOf(PipelineWaitException.class);
        assertThat(((Throwable) refused).getMessage())
                .contains("a command for aggregate [other] dispatched before it is still in the ring");
        awaitStored("other", 2);
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"), new Added("other", 5));
    }

    @Test
    void whenTheOuterCommandsEventsFailToBeStoredTheOtherAggregateIsReadFromTheStoreBeforeItsNextCommand() {
        CommandGateway gateway = startRing(Topology.COMPACT);
        ring.engine.refuse(new Added("r", 3));

        Object failure = noHang(() -> scenario(gateway, g -> g.sendAndWait(
                new AddAroundNested("r", 1, new Add("other", 5), 3))));

        assertThat(failure).isInstanceOf(RuntimeException.class);
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"));
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("other", 6))))
                .as("the other aggregate as the store has it, without the event that failed to be stored")
                .containsExactly(6L);
        assertThat(ring.storedSequenceNumbers("other")).containsExactly(0L, 1L);
    }

    /**
     * The outer command was handled on top of a command of its own aggregate whose events the store then refused, so
     * it fails at the store (it sent a command, so it is not handled again): the aggregate its nested command ran on
     * is given up with it, and read from the store before its next command, not left ahead of the store.
     */
    @Test
    void whenTheOuterCommandFailsAsBuiltOnRefusedEventsTheOtherAggregateIsReadFromTheStoreBeforeItsNextCommand()
            throws Exception {
        CommandGateway gateway = startRing(Topology.COMPACT);
        gateway.sendAndWait(new Create("r"));
        gateway.sendAndWait(new Create("other"));
        ring.engine.refuse(new Added("r", 1));
        CountDownLatch outerHandled = new CountDownLatch(1);
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            Object result = chain.proceed();
            if (unitOfWork.getMessage().getPayload() instanceof AddAroundNested) {
                outerHandled.countDown();
            }
            return result;
        });

        FaultyStorageEngine.HeldAppend held = ring.engine.holdNextAppend();
        CompletableFuture<Object> gate = gateway.send(new Add("r", 100));
        held.awaitStarted();
        CompletableFuture<Object> refused = gateway.send(new Add("r", 1));
        CompletableFuture<Object> outer = gateway.send(new AddAroundNested("r", 2, new Add("other", 5), 3));
        assertThat(outerHandled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(gate.get(10, TimeUnit.SECONDS)).isEqualTo(List.of(100L));
        assertThat(refused).failsWithin(Duration.ofSeconds(10));
        assertThat(outer).failsWithin(Duration.ofSeconds(10))
                         .withThrowableOfType(ExecutionException.class)
                         .withMessageContaining("failed to be stored");
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("other", 6))))
                .as("the other aggregate as the store has it, without the nested command's unstored event")
                .containsExactly(6L);
        assertThat(ring.storedSequenceNumbers("other")).containsExactly(0L, 1L);
    }

    /**
     * The nested command fails after applying an event, and its aggregate cannot be read back from the store at that
     * moment, while an earlier command of that aggregate is still on its way to the store: the aggregate's next
     * command reads it again with that earlier command's events, as SimpleCommandBus would have it.
     */
    @Test
    void aNestedCommandWhoseAggregateCannotBeReadBackAfterItFailedKeepsTheEarlierCommandsStillOnTheirWayToTheStore()
            throws Exception {
        CommandGateway gateway = startRing(Topology.COMPACT);
        gateway.sendAndWait(new Create("r"));
        gateway.sendAndWait(new Create("other"));
        CountDownLatch outerHandled = new CountDownLatch(1);
        CountDownLatch nextHandled = new CountDownLatch(1);
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            Object result = chain.proceed();
            Object payload = unitOfWork.getMessage().getPayload();
            if (payload instanceof WaitCatching) {
                outerHandled.countDown();
            } else if (new Add("other", 8).equals(payload)) {
                nextHandled.countDown();
            }
            return result;
        });
        FaultyStorageEngine.HeldAppend held = ring.engine.holdNextAppend();
        CompletableFuture<Object> earlier = gateway.send(new Add("other", 5));
        held.awaitStarted(); // Added(other, 5) is in the store's append, not yet stored
        ring.engine.failNextRead();
        CompletableFuture<Object> outer = gateway.send(new WaitCatching("r", new AddThenFail("other", 7)));
        assertThat(outerHandled.await(10, TimeUnit.SECONDS)).isTrue(); // dispatched after it, so it runs in place
        CompletableFuture<Object> next = gateway.send(new Add("other", 8));
        assertThat(nextHandled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(earlier.get(10, TimeUnit.SECONDS)).isEqualTo(List.of(5L));
        assertThat(outer.get(10, TimeUnit.SECONDS)).asInstanceOf(InstanceOfAssertFactories.THROWABLE)
                                                   .hasMessageContaining("fails after adding 7");
        assertThat(next.get(10, TimeUnit.SECONDS)).isEqualTo(List.of(5L, 8L));
        assertThat(ring.storedPayloads("other"))
                .containsExactly(new Created("other"), new Added("other", 5), new Added("other", 8));
        assertThat(ring.storedSequenceNumbers("other")).containsExactly(0L, 1L, 2L);
    }

    @Test
    void anAggregateChangedByANestedCommandWhoseMonitorThrowsIsStillRestoredWhenTheOuterCommandFails() {
        ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT).handlerThreads(1).messageMonitor(
                message -> new org.axonframework.monitoring.MessageMonitor.MonitorCallback() {
                    @Override
                    public void reportSuccess() {
                        if (message.getPayload() instanceof Add add && add.relayId().equals("other")) {
                            throw new IllegalStateException("the monitor fails on the nested command, on purpose");
                        }
                    }

                    @Override
                    public void reportFailure(Throwable cause) {
                    }

                    @Override
                    public void reportIgnored() {
                    }
                }));
        ((RingCommandBus) ring.bus).registerAggregate(Relay.class);
        CommandGateway gateway = gatewayOn(ring.bus);

        Object failure = noHang(() -> scenario(gateway, g -> g.sendAndWait(
                new AddWaitThenFail("r", 1, new Add("other", 5)))));

        assertThat(failure).isInstanceOf(RuntimeException.class);
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"));
        assertThat(noHang(() -> gateway.<List<Long>>sendAndWait(new Add("other", 6))))
                .as("the other aggregate, restored with the failed outer command").containsExactly(6L);
    }

    @Test
    void withTheFullTopologyANestedCommandForAnotherAggregateIsRefusedAtOnceAndNotHandled() {
        CommandGateway gateway = startRing(Topology.FULL);

        Object refused = noHang(() -> scenario(gateway, g -> g.sendAndWait(
                new WaitCatching("r", new Add("other", 5)))));

        assertThat(refused).isInstanceOf(PipelineWaitException.class);
        assertThat(((Throwable) refused).getMessage())
                .contains("[" + Add.class.getName() + "]", "not dispatched", "another thread owns that aggregate",
                          "send it without waiting")
                .containsPattern("ringbus-handle-\\d+");
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"));
        ring.assertStillHandlesValidCommands();
    }

    /**
     * A creation command waited for from another aggregate's handler runs in place on the one handler thread, as
     * SimpleCommandBus runs it: the new aggregate's events are stored with the outer command's, and its next command
     * finds it. (Until 2026-11-25 ringbus refused it with PipelineWaitException.)
     */
    @Test
    void aNestedCreationCommandForAnotherAggregateRunsInPlaceAsOnSimpleCommandBus() {
        CommandGateway gateway = startRing(Topology.COMPACT);
        Function<CommandGateway, Object> commands = g -> g.sendAndWait(new WaitCatching("r", new Create("third")));

        Object result = noHang(() -> scenario(gateway, commands));

        assertThat(result).isEqualTo(onSimpleCommandBus(commands).result());
        assertThat(ring.storedPayloads("third")).containsExactly(new Created("third"));
        assertThat(gateway.<Object>sendAndWait(new Add("third", 2))).isNotNull();
        assertThat(ring.storedPayloads("third")).containsExactly(new Created("third"), new Added("third", 2));
    }

    /** An aggregate that exists cannot be created again in place: the nested command fails, the outer goes on. */
    @Test
    void aNestedCreationOfAnAggregateThatExistsFailsAndTheOuterCommandGoesOn() {
        CommandGateway gateway = startRing(Topology.COMPACT);

        Object caught = noHang(() -> scenario(gateway, g -> g.sendAndWait(
                new WaitCatching("r", new Create("other")))));

        assertThat(caught).isInstanceOf(AggregateStreamCreationException.class);
        assertThat(ring.storedPayloads("other")).containsExactly(new Created("other"));
        ring.assertStillHandlesValidCommands();
    }

    private void awaitStored(String aggregateId, int events) throws InterruptedException {
        long deadline = System.nanoTime() + NO_HANG.toNanos();
        while (ring.storedPayloads(aggregateId).size() < events && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
    }

    // --- the same commands on Axon's SimpleCommandBus ----------------------------------------------------------

    record Outcome(Object result, Map<String, List<Object>> stored) {
    }

    private static Outcome onSimpleCommandBus(Function<CommandGateway, Object> commands) {
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        CommandGateway previous = Relay.gateway;
        try {
            SimpleCommandBus bus = Relay.onSimpleCommandBus(store);
            Object result = scenario(gatewayOn(bus), commands);
            return new Outcome(result instanceof Throwable ? result.getClass() : result,
                               Map.of("r", payloads(store, "r"), "other", payloads(store, "other")));
        } finally {
            Relay.gateway = previous;
            store.shutDown();
        }
    }

    private static List<Object> payloads(EmbeddedEventStore store, String aggregateId) {
        return store.readEvents(aggregateId).asStream().map(DomainEventMessage::getPayload)
                    .collect(Collectors.toList());
    }
}
