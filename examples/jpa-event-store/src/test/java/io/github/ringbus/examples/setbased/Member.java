package io.github.ringbus.examples.setbased;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** A member, registered with an e-mail address. */
@Aggregate
public class Member {

    public record Register(@TargetAggregateIdentifier String memberId, String email) {
    }

    public record Registered(String memberId, String email) {
    }

    @AggregateIdentifier
    private String memberId;

    protected Member() {
    }

    @CommandHandler
    public Member(Register command) {
        apply(new Registered(command.memberId(), command.email()));
    }

    @EventSourcingHandler
    void on(Registered event) {
        this.memberId = event.memberId();
    }
}
