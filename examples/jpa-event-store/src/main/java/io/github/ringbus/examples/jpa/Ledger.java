package io.github.ringbus.examples.jpa;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** An event-sourced ledger: opened, then credited; each credit returns the new total. */
@Aggregate
public class Ledger {

    public record OpenLedger(@TargetAggregateIdentifier String ledgerId) {
    }

    public record Credit(@TargetAggregateIdentifier String ledgerId, long amount) {
    }

    public record LedgerOpened(String ledgerId) {
    }

    public record Credited(String ledgerId, long amount) {
    }

    @AggregateIdentifier
    private String ledgerId;
    private long total;

    protected Ledger() {
    }

    @CommandHandler
    public Ledger(OpenLedger command) {
        apply(new LedgerOpened(command.ledgerId()));
    }

    @CommandHandler
    public long handle(Credit command) {
        apply(new Credited(ledgerId, command.amount()));
        return total;
    }

    @EventSourcingHandler
    void on(LedgerOpened event) {
        this.ledgerId = event.ledgerId();
    }

    @EventSourcingHandler
    void on(Credited event) {
        this.total += event.amount();
    }
}
