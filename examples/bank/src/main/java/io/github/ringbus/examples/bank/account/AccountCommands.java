package io.github.ringbus.examples.bank.account;

import org.axonframework.modelling.command.TargetAggregateIdentifier;

/** What can be asked of an {@link Account}. */
public final class AccountCommands {

    private AccountCommands() {
    }

    /** Opens a new account with a zero balance. */
    public record OpenAccount(@TargetAggregateIdentifier String accountId, String owner) {
    }

    /** Opens a sub-account of the same owner, an account of its own. */
    public record OpenSubAccount(@TargetAggregateIdentifier String accountId, String subAccountId) {
    }

    /** Puts money in; the result is the new balance. */
    public record DepositMoney(@TargetAggregateIdentifier String accountId, long amount) {
    }

    /** Takes money out, never more than the balance; the result is the new balance. */
    public record WithdrawMoney(@TargetAggregateIdentifier String accountId, long amount) {
    }
}
