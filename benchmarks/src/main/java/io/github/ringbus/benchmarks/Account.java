package io.github.ringbus.benchmarks;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

import java.util.concurrent.atomic.LongAdder;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;

/**
 * The workload: an annotated, event-sourced bank account with the commands and events it handles.
 *
 * <p>It also counts how often an account's history is started (an account constructed): once when the account
 * is opened, and once more every time a repository rebuilds it from the event store, from its events or from a
 * snapshot (serialized through its fields). The
 * benchmarks use that to show which buses replayed aggregates instead of keeping them cached.
 */
@com.fasterxml.jackson.annotation.JsonAutoDetect(
        fieldVisibility = com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility.ANY,
        getterVisibility = com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility.NONE,
        isGetterVisibility = com.fasterxml.jackson.annotation.JsonAutoDetect.Visibility.NONE)
public class Account {

    private static final LongAdder HISTORIES_STARTED = new LongAdder();

    @AggregateIdentifier
    private String id;
    private long balance;

    /** Opens an account. */
    @CommandHandler
    public Account(OpenAccount command) {
        HISTORIES_STARTED.increment();
        apply(new AccountOpened(command.accountId()));
    }

    /** For Axon, which rebuilds an account from its events or from a snapshot (Jackson, through the fields). */
    protected Account() {
        HISTORIES_STARTED.increment();
    }

    /** Deposits money. */
    @CommandHandler
    public void handle(Deposit command) {
        apply(new Deposited(command.accountId(), command.amount()));
    }

    @EventSourcingHandler
    void on(AccountOpened event) {
        id = event.accountId();
    }

    @EventSourcingHandler
    void on(Deposited event) {
        balance += event.amount();
    }

    /** How many times, in this JVM, an account's history was started: by opening it or by replaying it. */
    static long historiesStarted() {
        return HISTORIES_STARTED.sum();
    }

    /** As {@link #historiesStarted()}, for the benchmarks of other packages. */
    public static long historiesStartedSoFar() {
        return HISTORIES_STARTED.sum();
    }

    /** Opens the account {@code accountId}. */
    public record OpenAccount(@TargetAggregateIdentifier String accountId) {
    }

    /** Adds {@code amount} to the balance of {@code accountId}. */
    public record Deposit(@TargetAggregateIdentifier String accountId, long amount) {
    }

    /** The account {@code accountId} was opened. */
    public record AccountOpened(String accountId) {
    }

    /** {@code amount} was added to the balance of {@code accountId}. */
    public record Deposited(String accountId, long amount) {
    }
}
