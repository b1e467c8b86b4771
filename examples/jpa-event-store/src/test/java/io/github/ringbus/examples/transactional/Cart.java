package io.github.ringbus.examples.transactional;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** A cart: created, submitted, then published once; a failed publication is recorded on it. */
@Aggregate
public class Cart {

    public record Create(@TargetAggregateIdentifier String cartId) {
    }

    public record Submit(@TargetAggregateIdentifier String cartId) {
    }

    public record Publish(@TargetAggregateIdentifier String cartId) {
    }

    public record Created(String cartId) {
    }

    public record Submitted(String cartId) {
    }

    public record Published(String cartId) {
    }

    public record PublicationFailed(String cartId) {
    }

    @AggregateIdentifier
    private String cartId;
    private boolean submitted;
    private boolean published;

    protected Cart() {
    }

    @CommandHandler
    public Cart(Create command) {
        apply(new Created(command.cartId()));
    }

    @CommandHandler
    void handle(Submit command) {
        apply(new Submitted(cartId));
    }

    void publish() {
        if (!submitted) {
            throw new IllegalStateException("cannot publish a cart that was never submitted");
        }
        if (published) {
            throw new IllegalStateException("cannot publish a cart twice");
        }
        apply(new Published(cartId));
    }

    void failPublication() {
        apply(new PublicationFailed(cartId));
    }

    @EventSourcingHandler
    void on(Created event) {
        cartId = event.cartId();
    }

    @EventSourcingHandler
    void on(Submitted event) {
        submitted = true;
    }

    @EventSourcingHandler
    void on(Published event) {
        published = true;
    }
}
