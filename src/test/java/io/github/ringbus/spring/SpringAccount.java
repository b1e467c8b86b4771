package io.github.ringbus.spring;

import io.github.ringbus.fixtures.Account.InsufficientFundsException;
import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.AccountEvents;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** The test fixtures' bank account, as a Spring {@code @Aggregate}. */
@Aggregate
public class SpringAccount {

    @AggregateIdentifier
    private String id;
    private long balance;

    protected SpringAccount() {
    }

    @CommandHandler
    public SpringAccount(AccountCommands.Open command) {
        apply(new AccountEvents.Opened(command.accountId()));
    }

    @CommandHandler
    public long handle(AccountCommands.Deposit command) {
        apply(new AccountEvents.Deposited(id, command.amount()));
        return balance;
    }

    @CommandHandler
    public void handle(AccountCommands.Withdraw command) {
        if (command.amount() > balance) {
            throw new InsufficientFundsException(id, balance, command.amount());
        }
        apply(new AccountEvents.Withdrawn(id, command.amount()));
    }

    @CommandHandler
    public long handle(AccountCommands.GetBalance command) {
        return balance;
    }

    @EventSourcingHandler
    void on(AccountEvents.Opened event) {
        this.id = event.accountId();
    }

    @EventSourcingHandler
    void on(AccountEvents.Deposited event) {
        this.balance += event.amount();
    }

    @EventSourcingHandler
    void on(AccountEvents.Withdrawn event) {
        this.balance -= event.amount();
    }
}
