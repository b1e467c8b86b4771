package io.github.ringbus.postgres;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * The seeded torture's aggregate: an account whose every event names the command that produced it and the balance
 * after it, so that the stored history alone tells whether each command ran on the true state (each balance is the
 * one before it plus the amount) and which commands are stored, and how often. A command carries the fault the
 * torture injects into it.
 */
public class TortureAccount {

    /** Where the torture makes a command fail, or something around it throw. */
    public enum Fault {
        NONE,
        /** The handler throws before it applies anything. */
        HANDLER_BEFORE_APPLY,
        /** The handler throws after it applied its events: the aggregate has changed already. */
        HANDLER_AFTER_APPLY,
        /** A handler interceptor throws before the handler. */
        INTERCEPTOR_BEFORE,
        /** A handler interceptor throws after the handler returned (its events applied). */
        INTERCEPTOR_AFTER,
        /** A dispatch interceptor throws: the dispatch itself fails. */
        DISPATCH_INTERCEPTOR,
        /** The message monitor's callback throws when told the outcome: the command is not affected. */
        MONITOR,
        /** The caller's callback throws: the command is not affected. */
        CALLBACK,
        /** The storage engine fails the append that holds the command's events, before writing. */
        STORE_BEFORE_WRITE,
        /** The transaction that wrote the command's events fails before its commit (rolled back). */
        STORE_AFTER_WRITE,
        /** The transaction that holds the command's events commits, and then reports a failure: outcome unknown. */
        COMMIT_UNKNOWN,
        /**
         * The handler applies its events, sets its thread's interrupt flag (as a library that caught an
         * {@code InterruptedException} does) and returns normally: the command succeeds.
         */
        HANDLER_INTERRUPTS,
        /** The storage engine's append that holds the command's events sets its thread's interrupt flag first. */
        STORE_INTERRUPTS,
        /** The caller's callback sets the interrupt flag of the ring's thread it runs on: the command succeeds. */
        CALLBACK_INTERRUPTS,
        /**
         * The first append that holds the command's events fails as PostgreSQL fails a deadlock's victim (SQLState
         * 40P01), before writing; a later append of them goes through: the command may succeed.
         */
        STORE_DEADLOCK
    }

    /** Thrown where the torture injects a failure. */
    public static final class InjectedFailure extends RuntimeException {

        public InjectedFailure(Fault fault, long commandId) {
            this(fault, commandId, null);
        }

        public InjectedFailure(Fault fault, long commandId, Throwable cause) {
            super("Injected " + fault + " in command " + commandId, cause, false, false);
        }
    }

    public record Open(@TargetAggregateIdentifier String accountId, long commandId, Fault fault) {
    }

    public record Deposit(@TargetAggregateIdentifier String accountId, long commandId, long amount, Fault fault) {
    }

    /** A deposit in two events: both are stored or neither. */
    public record DepositInTwo(@TargetAggregateIdentifier String accountId, long commandId, long amount, Fault fault) {
    }

    public record GetBalance(@TargetAggregateIdentifier String accountId) {
    }

    public record Opened(String accountId, long commandId, Fault fault) {
    }

    public record Deposited(String accountId, long commandId, long amount, long balanceAfter, Fault fault) {
    }

    @AggregateIdentifier
    private String id;
    private long balance;

    protected TortureAccount() {
    }

    @CommandHandler
    public TortureAccount(Open command) {
        failIf(command.fault(), Fault.HANDLER_BEFORE_APPLY, command.commandId());
        apply(new Opened(command.accountId(), command.commandId(), command.fault()));
        failIf(command.fault(), Fault.HANDLER_AFTER_APPLY, command.commandId());
        interruptIf(command.fault());
    }

    @CommandHandler
    public long handle(Deposit command) {
        failIf(command.fault(), Fault.HANDLER_BEFORE_APPLY, command.commandId());
        apply(new Deposited(id, command.commandId(), command.amount(), balance + command.amount(), command.fault()));
        failIf(command.fault(), Fault.HANDLER_AFTER_APPLY, command.commandId());
        interruptIf(command.fault());
        return balance;
    }

    @CommandHandler
    public long handle(DepositInTwo command) {
        failIf(command.fault(), Fault.HANDLER_BEFORE_APPLY, command.commandId());
        long first = command.amount() / 2;
        long second = command.amount() - first;
        apply(new Deposited(id, command.commandId(), first, balance + first, command.fault()));
        apply(new Deposited(id, command.commandId(), second, balance + second, command.fault()));
        failIf(command.fault(), Fault.HANDLER_AFTER_APPLY, command.commandId());
        interruptIf(command.fault());
        return balance;
    }

    @CommandHandler
    public long handle(GetBalance command) {
        return balance;
    }

    @EventSourcingHandler
    void on(Opened event) {
        this.id = event.accountId();
    }

    @EventSourcingHandler
    void on(Deposited event) {
        this.balance += event.amount();
    }

    private static void interruptIf(Fault fault) {
        if (fault == Fault.HANDLER_INTERRUPTS) {
            Thread.currentThread().interrupt();
        }
    }

    private static void failIf(Fault fault, Fault here, long commandId) {
        if (fault == here) {
            throw new InjectedFailure(fault, commandId);
        }
    }
}
