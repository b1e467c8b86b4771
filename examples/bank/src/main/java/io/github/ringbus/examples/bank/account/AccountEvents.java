package io.github.ringbus.examples.bank.account;

/** What happened to an {@link Account}: these are what the event store keeps. */
public final class AccountEvents {

    private AccountEvents() {
    }

    public record AccountOpened(String accountId, String owner) {
    }

    public record MoneyDeposited(String accountId, long amount) {
    }

    public record MoneyWithdrawn(String accountId, long amount) {
    }

    /** A sub-account was opened: its first events, after its {@link AccountOpened}. */
    public record SubAccountOpened(String parentAccountId, String subAccountId) {
    }

    /** No deposit reached the account within the funding window after it was opened. */
    public record AccountFlaggedUnfunded(String accountId) {
    }
}
