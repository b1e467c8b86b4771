package io.github.ringbus.examples.bank.account;

/** A withdrawal asked for more than the account holds: the account is left as it was. */
public class InsufficientFundsException extends RuntimeException {

    public InsufficientFundsException(String accountId, long balance, long amount) {
        super("Account " + accountId + " holds " + balance + " and cannot pay out " + amount);
    }
}
