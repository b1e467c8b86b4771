package io.github.ringbus.spring;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** An aggregate whose {@code @Aggregate} names a repository bean of the application's own. */
@Aggregate(repository = "ledgerRepository")
public class LedgerWithOwnRepository {

    public record OpenLedger(@TargetAggregateIdentifier String ledgerId) {
    }

    public record LedgerOpened(String ledgerId) {
    }

    @AggregateIdentifier
    private String ledgerId;

    protected LedgerWithOwnRepository() {
    }

    @CommandHandler
    public LedgerWithOwnRepository(OpenLedger command) {
        apply(new LedgerOpened(command.ledgerId()));
    }

    @EventSourcingHandler
    void on(LedgerOpened event) {
        this.ledgerId = event.ledgerId();
    }
}
