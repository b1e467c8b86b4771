package quickstart;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

public class QuickStart {

    record Open(@TargetAggregateIdentifier String accountId) {}
    record Deposit(@TargetAggregateIdentifier String accountId, long amount) {}
    record Opened(String accountId) {}
    record Deposited(String accountId, long amount) {}

    public static class Account {
        @AggregateIdentifier
        private String accountId;
        private long balance;

        protected Account() {
        }

        @CommandHandler
        public Account(Open command) {
            apply(new Opened(command.accountId()));
        }

        @CommandHandler
        public long handle(Deposit command) {
            apply(new Deposited(accountId, command.amount()));
            return balance;
        }

        @EventSourcingHandler
        void on(Opened event) {
            accountId = event.accountId();
        }

        @EventSourcingHandler
        void on(Deposited event) {
            balance += event.amount();
        }
    }

    public static void main(String[] args) {
        Configuration axon = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                        .storageEngine(new InMemoryEventStorageEngine())
                        .build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder()
                        .axonConfiguration(c)
                        .build())
                .start();

        axon.commandGateway().sendAndWait(new Open("acc-1"));
        long balance = axon.commandGateway().sendAndWait(new Deposit("acc-1", 100));
        System.out.println("balance: " + balance);

        axon.shutdown();
    }
}
