package io.github.ringbus.model;

import io.github.ringbus.Topology;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.saga.SagaEventHandler;
import org.axonframework.modelling.saga.StartSaga;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.concurrent.TimeUnit;
import java.util.List;
import java.util.function.Consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * A callback that dispatches a command and waits for it, as a money-transfer saga does: it asks the target account to
 * receive the amount, with a callback whose failure branch cancels the transfer on the source account with
 * {@code sendAndWait}. On {@code SimpleCommandBus} the callback runs where it may wait; on the ring it must too, or the
 * transfer is never cancelled and the amount stays reserved. The saga runs on a tracking processor, as Axon
 * configures one by default; the callback is a plain {@code CommandCallback} in one test and a function chained onto
 * the gateway's future in the other.
 */
class CallbackThatWaitsScenarioTest extends OnTwins {

    private void start(Topology topology, Class<?> saga) {
        Consumer<Configurer> application = c -> c
                .configureAggregate(AggregateConfigurer.defaultConfiguration(Account.class))
                .eventProcessing(processing -> processing.registerSaga(saga));
        start(topology, application);
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aCallbackThatWaitsForACommandItSentCancelsTheTransfer(Topology topology) throws InterruptedException {
        start(topology, CallbackTransferSaga.class);
        transfersOneRefusedOneToAMissingAccountAndOneThatSucceeds();
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aFunctionChainedOntoTheGatewaysFutureThatWaitsCancelsTheTransfer(Topology topology)
            throws InterruptedException {
        start(topology, FutureTransferSaga.class);
        transfersOneRefusedOneToAMissingAccountAndOneThatSucceeds();
    }

    private void transfersOneRefusedOneToAMissingAccountAndOneThatSucceeds() throws InterruptedException {
        List<List<ConfiguredTwins.Outcome>> outcomes = twins.sendAll(List.of(
                new Open("source", 200, 1_000), new Open("small", 0, 50), new Open("large", 0, 1_000),
                new RequestTransfer("source", "t-refused", "small", 80),
                new RequestTransfer("source", "t-missing", "nobody", 10),
                new RequestTransfer("source", "t-done", "large", 30)));
        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));

        // Each transfer ends in a cancel or a completion on the source: 3 requests, 2 cancels, 1 completion.
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (System.nanoTime() < until && (twins.storedOnBoth("source").get(0).size() < 7
                || twins.storedOnBoth("source").get(1).size() < 7)) {
            Thread.sleep(10);
        }
        // The saga runs beside the commands sent here on either bus: the order in which they meet is not the bus's.
        List<Object> onAxon = twins.storedOnBoth("source").get(0).stream().map(ConfiguredTwins.Stored::payload).toList();
        assertThat(twins.storedOnBoth("source").get(1))
                .extracting(ConfiguredTwins.Stored::sequenceNumber).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L);
        assertThat(twins.storedOnBoth("source").get(1))
                .extracting(ConfiguredTwins.Stored::payload)
                .containsExactlyInAnyOrderElementsOf(onAxon)
                .contains(new TransferCancelled("source", "t-refused", 80),
                          new TransferCancelled("source", "t-missing", 10),
                          new TransferCompleted("source", "t-done"));
        assertThat(balance(twins.ring, "source")).isEqualTo(balance(twins.axon, "source")).isEqualTo(170);
    }

    private static int balance(Configuration configuration, String account) {
        return configuration.commandGateway().sendAndWait(new Balance(account));
    }

    record Open(@TargetAggregateIdentifier String id, int balance, int maximum) {
    }

    record RequestTransfer(@TargetAggregateIdentifier String source, String transfer, String target, int amount) {
    }

    record Receive(@TargetAggregateIdentifier String target, String transfer, int amount) {
    }

    record Complete(@TargetAggregateIdentifier String source, String transfer) {
    }

    record Cancel(@TargetAggregateIdentifier String source, String transfer, int amount) {
    }

    record Balance(@TargetAggregateIdentifier String id) {
    }

    record Opened(String id, int balance, int maximum) {
    }

    record TransferRequested(String source, String transfer, String target, int amount) {
    }

    record Received(String target, String transfer, int amount) {
    }

    record TransferCompleted(String source, String transfer) {
    }

    record TransferCancelled(String source, String transfer, int amount) {
    }

    public static class Account {

        @AggregateIdentifier
        private String id;
        private int balance;
        private int maximum;

        public Account() {
        }

        @CommandHandler
        public Account(Open command) {
            apply(new Opened(command.id(), command.balance(), command.maximum()));
        }

        @CommandHandler
        public void handle(RequestTransfer command) {
            if (command.amount() > balance) {
                throw new IllegalStateException("not enough on " + id);
            }
            apply(new TransferRequested(id, command.transfer(), command.target(), command.amount()));
        }

        @CommandHandler
        public void handle(Receive command) {
            if (balance + command.amount() > maximum) {
                throw new IllegalStateException("account " + id + " would exceed its maximum");
            }
            apply(new Received(id, command.transfer(), command.amount()));
        }

        @CommandHandler
        public void handle(Complete command) {
            apply(new TransferCompleted(id, command.transfer()));
        }

        @CommandHandler
        public void handle(Cancel command) {
            apply(new TransferCancelled(id, command.transfer(), command.amount()));
        }

        @CommandHandler
        public int handle(Balance query) {
            return balance;
        }

        @EventSourcingHandler
        void on(Opened event) {
            id = event.id();
            balance = event.balance();
            maximum = event.maximum();
        }

        @EventSourcingHandler
        void on(TransferRequested event) {
            balance -= event.amount();
        }

        @EventSourcingHandler
        void on(Received event) {
            balance += event.amount();
        }

        @EventSourcingHandler
        void on(TransferCancelled event) {
            balance += event.amount();
        }
    }

    /** Receives on the target with a callback; on failure, cancels on the source and waits for it. */
    public static class CallbackTransferSaga {

        private String source;
        private int amount;

        @StartSaga
        @SagaEventHandler(associationProperty = "transfer")
        public void on(TransferRequested event, CommandGateway commandGateway) {
            source = event.source();
            amount = event.amount();
            String transfer = event.transfer();
            commandGateway.send(new Receive(event.target(), transfer, amount), (command, result) -> {
                if (result.isExceptional()) {
                    commandGateway.sendAndWait(new Cancel(source, transfer, amount));
                } else {
                    commandGateway.sendAndWait(new Complete(source, transfer));
                }
            });
        }
    }

    /** The same, as a function chained onto the future that {@code CommandGateway.send} returns. */
    public static class FutureTransferSaga {

        private String source;
        private int amount;

        @StartSaga
        @SagaEventHandler(associationProperty = "transfer")
        public void on(TransferRequested event, CommandGateway commandGateway) {
            source = event.source();
            amount = event.amount();
            String transfer = event.transfer();
            commandGateway.send(new Receive(event.target(), transfer, amount)).whenComplete((result, failure) -> {
                if (failure != null) {
                    commandGateway.sendAndWait(new Cancel(source, transfer, amount));
                } else {
                    commandGateway.sendAndWait(new Complete(source, transfer));
                }
            });
        }
    }
}
