package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.RelayingProjections;
import io.github.ringbus.fixtures.RelayingProjections.Refusal;
import io.github.ringbus.fixtures.RelayingProjections.Refuser;
import io.github.ringbus.fixtures.RelayingProjections.Relay;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.SubscribingEventProcessor;
import org.axonframework.messaging.responsetypes.ResponseTypes;
import org.axonframework.queryhandling.GenericSubscriptionQueryMessage;
import org.axonframework.queryhandling.QueryUpdateEmitter;
import org.axonframework.queryhandling.SimpleQueryUpdateEmitter;
import org.axonframework.queryhandling.SubscriptionQueryUpdateMessage;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the world sees of a batch on real PostgreSQL, where the subscribers run inside the batch's transaction, after
 * its append, and their processor's transaction joins it: a batch split at a command a projection refuses sends each
 * stored command's consequences once and the refused one's never, and a subscription query's subscriber gets only the
 * updates of stored commands, once they are committed (as on SimpleCommandBus: {@code behaviour.BatchEffectsTest}).
 */
class PostgresBatchEffectsTest extends OnPostgres {

    @Test
    void aBatchSplitAtARefusedCommandSendsEachStoredCommandsConsequencesOnceAndEmitsOnlyTheirUpdates()
            throws Exception {
        CountDownLatch gateHeld = new CountDownLatch(1);
        CountDownLatch releaseGate = new CountDownLatch(1);
        PostgresServer.AppendHook holdTheGate = (connection, events) -> {
            if (events.size() == 1 && events.get(0).getPayload() instanceof Deposited deposited
                    && deposited.accountId().equals("gate") && deposited.amount() == 1) {
                gateHeld.countDown();
                try {
                    releaseGate.await(20, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
        List<Long> updates = new CopyOnWriteArrayList<>();
        List<SubscribingEventProcessor> processors = new ArrayList<>();
        try (PostgresRing ring = new PostgresRing(server, holdTheGate, b -> b)) {
            for (String account : List.of("gate", "side", "x1", "x2", "x3")) {
                assertThat(ring.sendAndWait(new Open(account)).isExceptional()).isFalse();
            }
            QueryUpdateEmitter emitter = SimpleQueryUpdateEmitter.builder().build();
            emitter.registerUpdateHandler(new GenericSubscriptionQueryMessage<>(
                           "amounts", ResponseTypes.instanceOf(Long.class), ResponseTypes.instanceOf(Long.class)), 1024)
                   .getUpdates().map(SubscriptionQueryUpdateMessage::getPayload).subscribe(u -> updates.add((Long) u));
            CommandGateway gateway = DefaultCommandGateway.builder().commandBus(ring.bus).build();
            processors.add(RelayingProjections.subscribe(ring.eventStore, "relay", new Relay(gateway, emitter, null),
                                                         ring.transactions));
            processors.add(RelayingProjections.subscribe(ring.eventStore, "refuser", new Refuser(), ring.transactions));

            int handledBefore = ring.handled.get();
            CompletableFuture<CommandResultMessage<Object>> gate = ring.send(new Deposit("gate", 1));
            assertThat(gateHeld.await(10, TimeUnit.SECONDS)).isTrue();
            List<CompletableFuture<CommandResultMessage<Object>>> batch = new ArrayList<>();
            for (Object deposit : RelayingProjections.batchWithARefusedDeposit()) {
                batch.add(ring.send(deposit));
            }
            ring.awaitHandled(handledBefore + 4);
            Thread.sleep(250); // the handle stage publishes its progress after its last handler returned
            releaseGate.countDown();

            assertThat(gate.get(30, TimeUnit.SECONDS).isExceptional()).isFalse();
            assertThat(batch.get(0).get(30, TimeUnit.SECONDS).getPayload()).isEqualTo(2L);
            assertThat(batch.get(1).get(30, TimeUnit.SECONDS).exceptionResult()).isInstanceOf(Refusal.class);
            assertThat(batch.get(2).get(30, TimeUnit.SECONDS).getPayload()).isEqualTo(4L);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (PostgresRing.storedDeposits(server, "side").size() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            Thread.sleep(300); // a consequence sent twice has time to be stored

            assertThat(PostgresRing.storedDeposits(server, "side")).containsExactly(2L, 4L);
            assertThat(PostgresRing.storedDeposits(server, "x2")).isEmpty();
            assertThat(updates).containsExactly(2L, 4L);
        } finally {
            releaseGate.countDown();
            processors.forEach(SubscribingEventProcessor::shutDown);
        }
    }
}
