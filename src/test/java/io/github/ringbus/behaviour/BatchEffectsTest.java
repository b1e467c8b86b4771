package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.RelayingProjections;
import io.github.ringbus.fixtures.RelayingProjections.Noted;
import io.github.ringbus.fixtures.RelayingProjections.Refusal;
import io.github.ringbus.fixtures.RelayingProjections.Refuser;
import io.github.ringbus.fixtures.RelayingProjections.Relay;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.SubscribingEventProcessor;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.responsetypes.ResponseTypes;
import org.axonframework.queryhandling.GenericSubscriptionQueryMessage;
import org.axonframework.queryhandling.QueryUpdateEmitter;
import org.axonframework.queryhandling.SimpleQueryUpdateEmitter;
import org.axonframework.queryhandling.SubscriptionQueryMessage;
import org.axonframework.queryhandling.SubscriptionQueryUpdateMessage;
import org.axonframework.queryhandling.UpdateHandlerRegistration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import java.util.stream.Collectors;

import static io.github.ringbus.fixtures.RelayingProjections.REFUSED;
import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * What the rest of the application sees of a batch whose store attempt is tried again: each effect of a stored
 * command once, none of a failed one, as on {@code SimpleCommandBus}, where every command's subscribers run nested in
 * its own Unit of Work and transaction. Each scenario runs on SimpleCommandBus (the twin, one command at a time) and on
 * the ring (its commands taken by the store stage as one batch, in which a subscribing processor under Axon's
 * {@code PropagatingErrorHandler} refuses one command: {@link RelayingProjections}), and what the world saw is compared: the commands the
 * subscribers sent and what they stored, the subscription-query updates emitted, the events published in reaction.
 */
class BatchEffectsTest {

    private RingbusFixture ring;
    private SimpleBusTwin twin;
    private final List<SubscribingEventProcessor> processors = new ArrayList<>();

    @AfterEach
    void shutDown() {
        processors.forEach(SubscribingEventProcessor::shutDown);
        if (ring != null) {
            ring.close();
        }
        if (twin != null) {
            twin.close();
        }
    }

    @Test
    void aCommandASubscriberSendsIsStoredOncePerStoredCauseAndNeverForARefusedOne() throws InterruptedException {
        List<Object> onTwin = sideDepositsOn(twinWorld(), World::run);
        List<Object> onRing = sideDepositsOn(ringWorld(), World::runAsOneBatch);

        assertThat(onTwin).containsExactly(new Deposited("side", 2), new Deposited("side", 4));
        assertThat(onRing).containsExactlyElementsOf(onTwin);
    }

    @Test
    void aSubscriptionQuerySubscriberGetsNoUpdateOfARefusedCommandNorTwoOfARetriedOne() throws InterruptedException {
        World onTwin = twinWorld();
        onTwin.run();
        World onRing = ringWorld();
        onRing.runAsOneBatch();

        assertThat(onTwin.updates).containsExactly(2L, 4L);
        assertThat(onRing.updates).containsExactlyElementsOf(onTwin.updates);
    }

    @Test
    void anEventASubscriberPublishesIsStoredOnceAfterItsCauseAndNeverForARefusedCommand() throws InterruptedException {
        World onTwin = twinWorld();
        onTwin.run();
        World onRing = ringWorld();
        onRing.runAsOneBatch();

        // The side deposits the relay sends are left out: on SimpleCommandBus such a command runs nested, at once, on
        // the ring it is a command of its own, handled once its cause's batch committed (HeldEffects).
        assertThat(onTwin.storedExceptSide()).containsSubsequence(
                new Deposited("x1", 2), new Noted("x1", 2), new Deposited("x3", 4), new Noted("x3", 4));
        assertThat(onTwin.storedExceptSide()).doesNotContain(new Noted("x2", REFUSED));
        assertThat(onRing.storedExceptSide()).containsExactlyElementsOf(onTwin.storedExceptSide());
    }

    @Test
    void theOutcomesOfTheBatchAreThoseOfSimpleCommandBus() throws InterruptedException {
        World onTwin = twinWorld();
        List<String> twinOutcomes = onTwin.run();
        World onRing = ringWorld();
        List<String> ringOutcomes = onRing.runAsOneBatch();

        assertThat(twinOutcomes).containsExactly("2", "failed: " + Refusal.class.getName(), "4");
        assertThat(ringOutcomes).containsExactlyElementsOf(twinOutcomes);
    }

    @Test
    void everyCommandASubscriberSendsIsHandledWhenTheyAreMoreThanTheRingHasFreeSlots() throws InterruptedException {
        // A ring of 16 slots, and a subscriber that sends 40 commands for one deposit: released on the store thread
        // (which may not wait for a slot it frees itself) most of them failed for a full ring.
        ring = RingbusFixture.started(b -> b.ringSize(16));
        CommandGateway gateway = DefaultCommandGateway.builder().commandBus(ring.bus).build();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        processors.add(RelayingProjections.subscribe(ring.eventStore, "fan-out", new Object() {
            @org.axonframework.eventhandling.EventHandler
            void on(Deposited deposited) {
                if (deposited.accountId().equals("x1")) {
                    for (long i = 1; i <= 40; i++) {
                        gateway.send(new Deposit("side", i)).exceptionally(failure -> {
                            failures.add(failure);
                            return null;
                        });
                    }
                }
            }
        }));
        ring.sendAndWait(new Open("side"));
        ring.sendAndWait(new Open("x1"));

        assertThat(ring.sendAndWait(new Deposit("x1", 1)).isExceptional()).isFalse();

        long deadline = System.nanoTime() + 10_000_000_000L;
        while (ring.storedPayloads("side").size() < 41 && failures.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertThat(failures).isEmpty();
        assertThat(ring.storedPayloads("side")).hasSize(41); // opened, and each of the 40 deposits once
    }

    private static List<Object> sideDepositsOn(World world, Run run) throws InterruptedException {
        run.on(world);
        world.awaitSideDeposits(2);
        return world.storedInOrder().stream()
                    .filter(payload -> payload instanceof Deposited deposited && deposited.accountId().equals("side"))
                    .collect(Collectors.toList());
    }

    @FunctionalInterface
    private interface Run {
        void on(World world) throws InterruptedException;
    }

    private World twinWorld() {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        twin = new SimpleBusTwin(engine);
        return new World(twin.bus, twin.eventStore, () -> engine.readEvents(null, false)
                                                                 .map(EventMessage::getPayload)
                                                                 .collect(Collectors.<Object>toList()),
                         commands -> {
                             List<String> outcomes = new ArrayList<>();
                             for (Object command : commands) {
                                 outcomes.add(describe(twin.send(command)));
                             }
                             return outcomes;
                         }, null);
    }

    private World ringWorld() {
        ring = RingbusFixture.started();
        return new World(ring.bus, ring.eventStore, ring::allStoredPayloads, null, commands -> {
            List<Outcome> outcomes = ring.sendAsOneBatch(new Deposit("gate", 1), commands.toArray());
            List<String> described = new ArrayList<>();
            for (Outcome outcome : outcomes) {
                described.add(describe(outcome.await()));
            }
            return described;
        });
    }

    private static String describe(CommandResultMessage<?> result) {
        return result.isExceptional() ? "failed: " + result.exceptionResult().getClass().getName()
                : String.valueOf(result.getPayload());
    }

    /**
     * One application on a bus: accounts x1-x3 and a side account; a projection that, for each deposit on an x
     * account, sends a deposit of the same amount to the side account, emits the amount to a subscription query and
     * publishes a {@link Noted}; and a second projection that refuses a deposit of {@value #REFUSED}.
     */
    private final class World {

        final CommandBus bus;
        final List<Long> updates = new CopyOnWriteArrayList<>();
        private final Supplier<List<Object>> stored;
        private final Batch sequential;
        private final Batch asOneBatch;

        World(CommandBus bus, EmbeddedEventStore eventStore, Supplier<List<Object>> stored,
              Batch sequential, Batch asOneBatch) {
            this.bus = bus;
            this.stored = stored;
            this.sequential = sequential;
            this.asOneBatch = asOneBatch;
            QueryUpdateEmitter emitter = SimpleQueryUpdateEmitter.builder().build();
            SubscriptionQueryMessage<String, Long, Long> query = new GenericSubscriptionQueryMessage<>(
                    "amounts", ResponseTypes.instanceOf(Long.class), ResponseTypes.instanceOf(Long.class));
            UpdateHandlerRegistration<Long> registration = emitter.registerUpdateHandler(query, 1024);
            registration.getUpdates().map(SubscriptionQueryUpdateMessage::getPayload).subscribe(updates::add);
            CommandGateway gateway = DefaultCommandGateway.builder().commandBus(bus).build();
            processors.add(RelayingProjections.subscribe(eventStore, "relay", new Relay(gateway, emitter, eventStore)));
            processors.add(RelayingProjections.subscribe(eventStore, "refuser", new Refuser()));
            for (String account : List.of("gate", "side", "x1", "x2", "x3")) {
                awaitSuccess(account, send(new Open(account)));
            }
        }

        private CommandResultMessage<?> send(Object command) {
            Outcome outcome = new Outcome();
            bus.dispatch(asCommandMessage(command), outcome);
            return outcome.await();
        }

        private void awaitSuccess(String account, CommandResultMessage<?> result) {
            assertThat(result.isExceptional()).as("open %s: %s", account, result).isFalse();
        }

        List<String> run() throws InterruptedException {
            awaitSuccess("gate", send(new Deposit("gate", 1)));
            return sequential.send(commands());
        }

        List<String> runAsOneBatch() throws InterruptedException {
            return asOneBatch.send(commands());
        }

        private List<Object> commands() {
            return RelayingProjections.batchWithARefusedDeposit();
        }

        /** Waits (at most 10 s) until the side account has the given number of deposits stored. */
        void awaitSideDeposits(int count) throws InterruptedException {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (System.nanoTime() < deadline && storedInOrder().stream().filter(
                    p -> p instanceof Deposited d && d.accountId().equals("side")).count() < count) {
                Thread.sleep(5);
            }
            // What is sent late (or twice) has time to arrive.
            Thread.sleep(200);
        }

        List<Object> storedInOrder() {
            return stored.get();
        }

        /** What is stored, in the order it was appended, but the side account's deposits. */
        List<Object> storedExceptSide() {
            return storedInOrder().stream()
                                  .filter(p -> !(p instanceof Deposited d && d.accountId().equals("side")))
                                  .collect(Collectors.toList());
        }
    }

    @FunctionalInterface
    private interface Batch {
        List<String> send(List<Object> commands) throws InterruptedException;
    }
}
