package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.EventHandler;
import org.axonframework.eventhandling.PropagatingErrorHandler;
import org.axonframework.eventhandling.SimpleEventHandlerInvoker;
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

    private static final long REFUSED = 13;

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
            processors.add(subscribe(ring, "relay", new Relay(gateway, emitter)));
            processors.add(subscribe(ring, "refuser", new Refuser()));

            int handledBefore = ring.handled.get();
            CompletableFuture<CommandResultMessage<Object>> gate = ring.send(new Deposit("gate", 1));
            assertThat(gateHeld.await(10, TimeUnit.SECONDS)).isTrue();
            List<CompletableFuture<CommandResultMessage<Object>>> batch = List.of(
                    ring.send(new Deposit("x1", 2)), ring.send(new Deposit("x2", REFUSED)),
                    ring.send(new Deposit("x3", 4)));
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

    private static SubscribingEventProcessor subscribe(PostgresRing ring, String name, Object handler) {
        SubscribingEventProcessor processor =
                SubscribingEventProcessor.builder()
                                         .name(name)
                                         .eventHandlerInvoker(SimpleEventHandlerInvoker.builder()
                                                                                       .eventHandlers(handler)
                                                                                       .listenerInvocationErrorHandler(
                                                                                               PropagatingErrorHandler.instance())
                                                                                       .build())
                                         .messageSource(ring.eventStore)
                                         .transactionManager(ring.transactions)
                                         .build();
        processor.start();
        return processor;
    }

    static class Refusal extends RuntimeException {
        Refusal(long amount) {
            super("a deposit of " + amount + " is refused by a projection");
        }
    }

    /** For each deposit on an x account: a side deposit sent and an update emitted. */
    static final class Relay {
        private final CommandGateway gateway;
        private final QueryUpdateEmitter emitter;

        Relay(CommandGateway gateway, QueryUpdateEmitter emitter) {
            this.gateway = gateway;
            this.emitter = emitter;
        }

        @EventHandler
        void on(Deposited deposited) {
            if (deposited.accountId().startsWith("x")) {
                gateway.send(new Deposit("side", deposited.amount()));
                emitter.emit(String.class, query -> true, deposited.amount());
            }
        }
    }

    static final class Refuser {
        @EventHandler
        void on(Deposited deposited) {
            if (deposited.amount() == REFUSED) {
                throw new Refusal(deposited.amount());
            }
        }
    }
}
