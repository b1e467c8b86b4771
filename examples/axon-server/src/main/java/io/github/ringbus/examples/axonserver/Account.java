package io.github.ringbus.examples.axonserver;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** An account: an ordinary event-sourced Axon aggregate, its events in Axon Server. */
@Aggregate
public class Account {

    @AggregateIdentifier
    private String accountId;
    private long balance;

    protected Account() {
        // For Axon: an empty account that its events are replayed on.
    }

    @CommandHandler
    public Account(AccountMessages.OpenAccount command) {
        apply(new AccountMessages.AccountOpened(command.getAccountId()));
    }

    /** @return the balance after the deposit */
    @CommandHandler
    public long handle(AccountMessages.Deposit command) {
        if (command.getAmount() <= 0) {
            throw new IllegalArgumentException("An amount must be positive, but was " + command.getAmount());
        }
        apply(new AccountMessages.Deposited(accountId, command.getAmount()));
        return balance;
    }

    /** @return the balance after the withdrawal */
    @CommandHandler
    public long handle(AccountMessages.Withdraw command) {
        if (command.getAmount() > balance) {
            throw new IllegalStateException("Insufficient funds on " + accountId + ": " + balance + " < "
                                                    + command.getAmount());
        }
        apply(new AccountMessages.Withdrawn(accountId, command.getAmount()));
        return balance;
    }

    @EventSourcingHandler
    void on(AccountMessages.AccountOpened event) {
        this.accountId = event.getAccountId();
    }

    @EventSourcingHandler
    void on(AccountMessages.Deposited event) {
        this.balance += event.getAmount();
    }

    @EventSourcingHandler
    void on(AccountMessages.Withdrawn event) {
        this.balance -= event.getAmount();
    }
}
