package io.github.ringbus.examples.axonserver;

import org.axonframework.modelling.command.TargetAggregateIdentifier;

import java.util.Objects;

/**
 * The commands and events of an {@link Account}. Plain classes, not records: the starter's default serializer
 * (XStream) cannot read records back.
 */
public final class AccountMessages {

    private AccountMessages() {
    }

    public static final class OpenAccount {
        @TargetAggregateIdentifier
        private final String accountId;

        public OpenAccount(String accountId) {
            this.accountId = accountId;
        }

        public String getAccountId() {
            return accountId;
        }
    }

    public static final class Deposit {
        @TargetAggregateIdentifier
        private final String accountId;
        private final long amount;

        public Deposit(String accountId, long amount) {
            this.accountId = accountId;
            this.amount = amount;
        }

        public String getAccountId() {
            return accountId;
        }

        public long getAmount() {
            return amount;
        }
    }

    public static final class Withdraw {
        @TargetAggregateIdentifier
        private final String accountId;
        private final long amount;

        public Withdraw(String accountId, long amount) {
            this.accountId = accountId;
            this.amount = amount;
        }

        public String getAccountId() {
            return accountId;
        }

        public long getAmount() {
            return amount;
        }
    }

    public static final class AccountOpened {
        private final String accountId;

        public AccountOpened(String accountId) {
            this.accountId = accountId;
        }

        public String getAccountId() {
            return accountId;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof AccountOpened other && accountId.equals(other.accountId);
        }

        @Override
        public int hashCode() {
            return accountId.hashCode();
        }

        @Override
        public String toString() {
            return "AccountOpened[" + accountId + "]";
        }
    }

    public static final class Deposited {
        private final String accountId;
        private final long amount;

        public Deposited(String accountId, long amount) {
            this.accountId = accountId;
            this.amount = amount;
        }

        public String getAccountId() {
            return accountId;
        }

        public long getAmount() {
            return amount;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Deposited other && accountId.equals(other.accountId) && amount == other.amount;
        }

        @Override
        public int hashCode() {
            return Objects.hash(accountId, amount);
        }

        @Override
        public String toString() {
            return "Deposited[" + accountId + ", " + amount + "]";
        }
    }

    public static final class Withdrawn {
        private final String accountId;
        private final long amount;

        public Withdrawn(String accountId, long amount) {
            this.accountId = accountId;
            this.amount = amount;
        }

        public String getAccountId() {
            return accountId;
        }

        public long getAmount() {
            return amount;
        }

        @Override
        public boolean equals(Object o) {
            return o instanceof Withdrawn other && accountId.equals(other.accountId) && amount == other.amount;
        }

        @Override
        public int hashCode() {
            return Objects.hash(accountId, amount);
        }

        @Override
        public String toString() {
            return "Withdrawn[" + accountId + ", " + amount + "]";
        }
    }
}
