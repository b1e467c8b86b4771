package io.github.ringbus.spring;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** A counter whose {@code @Aggregate} names a snapshot trigger definition bean. */
@Aggregate(snapshotTriggerDefinition = "counterSnapshots")
public class SnapshottedCounter {

    public record Start(@TargetAggregateIdentifier String counterId) {
    }

    public record Increment(@TargetAggregateIdentifier String counterId) {
    }

    public record Started(String counterId) {
    }

    public record Incremented(String counterId) {
    }

    @AggregateIdentifier
    private String counterId;
    private long count;

    protected SnapshottedCounter() {
    }

    @CommandHandler
    public SnapshottedCounter(Start command) {
        apply(new Started(command.counterId()));
    }

    @CommandHandler
    public long handle(Increment command) {
        apply(new Incremented(counterId));
        return count;
    }

    @EventSourcingHandler
    void on(Started event) {
        this.counterId = event.counterId();
    }

    @EventSourcingHandler
    void on(Incremented event) {
        this.count++;
    }
}
