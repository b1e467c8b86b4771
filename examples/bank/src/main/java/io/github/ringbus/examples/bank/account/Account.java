package io.github.ringbus.examples.bank.account;

import io.github.ringbus.examples.bank.account.AccountCommands.DepositMoney;
import io.github.ringbus.examples.bank.account.AccountCommands.OpenAccount;
import io.github.ringbus.examples.bank.account.AccountCommands.OpenSubAccount;
import io.github.ringbus.examples.bank.account.AccountCommands.WithdrawMoney;
import io.github.ringbus.examples.bank.account.AccountEvents.AccountOpened;
import io.github.ringbus.examples.bank.account.AccountEvents.MoneyDeposited;
import io.github.ringbus.examples.bank.account.AccountEvents.MoneyWithdrawn;
import io.github.ringbus.examples.bank.account.AccountEvents.SubAccountOpened;
import io.github.ringbus.examples.bank.account.AccountEvents.AccountFlaggedUnfunded;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.deadline.DeadlineManager;
import org.axonframework.deadline.annotation.DeadlineHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;
import static org.axonframework.modelling.command.AggregateLifecycle.createNew;

/**
 * A bank account, an ordinary event-sourced Axon aggregate. With ringbus on the class path its commands run on the
 * ring's handler threads and its events are appended to PostgreSQL in batches by the store stage.
 * <p>
 * The business rules: the balance never goes below zero; an account that receives no deposit within the funding
 * window after it was opened is flagged as unfunded (a deadline, see {@link FundingDeadline}). An account opens
 * sub-accounts for its owner: each is an account of its own, created by the parent's handler with
 * {@code AggregateLifecycle.createNew}, its events stored with the parent's in one transaction.
 */
@Aggregate
public class Account {

    @AggregateIdentifier
    private String accountId;
    private String owner;
    private long balance;
    private boolean funded;

    protected Account() {
        // For Axon: an empty account that its events are replayed on.
    }

    @CommandHandler
    public Account(OpenAccount command, DeadlineManager deadlines, FundingDeadline.Window fundingWindow) {
        if (command.owner() == null || command.owner().isBlank()) {
            throw new IllegalArgumentException("An account needs an owner");
        }
        apply(new AccountOpened(command.accountId(), command.owner()));
        deadlines.schedule(fundingWindow.duration(), FundingDeadline.NAME);
    }

    /** A sub-account, created by its parent account's handler: no funding deadline, the parent funds it. */
    private Account(String accountId, String owner, String parentAccountId) {
        apply(new AccountOpened(accountId, owner));
        apply(new SubAccountOpened(parentAccountId, accountId));
    }

    @CommandHandler
    public void handle(OpenSubAccount command) throws Exception {
        if (command.subAccountId().equals(accountId)) {
            throw new IllegalArgumentException("An account cannot be its own sub-account");
        }
        createNew(Account.class, () -> new Account(command.subAccountId(), owner, accountId));
    }

    @DeadlineHandler(deadlineName = FundingDeadline.NAME)
    void fundingWindowClosed() {
        if (!funded) {
            apply(new AccountFlaggedUnfunded(accountId));
        }
    }

    @CommandHandler
    public long handle(DepositMoney command) {
        requirePositive(command.amount());
        apply(new MoneyDeposited(accountId, command.amount()));
        return balance;
    }

    @CommandHandler
    public long handle(WithdrawMoney command) {
        requirePositive(command.amount());
        if (command.amount() > balance) {
            throw new InsufficientFundsException(accountId, balance, command.amount());
        }
        apply(new MoneyWithdrawn(accountId, command.amount()));
        return balance;
    }

    private static void requirePositive(long amount) {
        if (amount <= 0) {
            throw new IllegalArgumentException("An amount must be positive, but was " + amount);
        }
    }

    @EventSourcingHandler
    void on(AccountOpened event) {
        this.accountId = event.accountId();
        this.owner = event.owner();
    }

    @EventSourcingHandler
    void on(MoneyDeposited event) {
        this.balance += event.amount();
        this.funded = true;
    }

    @EventSourcingHandler
    void on(MoneyWithdrawn event) {
        this.balance -= event.amount();
    }
}
