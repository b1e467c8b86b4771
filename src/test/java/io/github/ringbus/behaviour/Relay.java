package io.github.ringbus.behaviour;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;

import java.util.ArrayList;
import java.util.List;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * An aggregate whose handlers send other commands through a {@link CommandGateway} and wait for them, as handlers do
 * on Axon's SimpleCommandBus. The gateway is set by the test ({@link #gateway}).
 */
public class Relay {

    /** The gateway the handlers send nested commands through; set by each test. */
    static volatile CommandGateway gateway;

    @AggregateIdentifier
    private String id;
    private final List<Long> values = new ArrayList<>();

    protected Relay() {
    }

    @CommandHandler
    Relay(Create command) {
        apply(new Created(command.relayId()));
    }

    /** Applies the value; returns the values so far. */
    @CommandHandler
    List<Long> handle(Add command) {
        apply(new Added(id, command.value()));
        return List.copyOf(values);
    }

    /** Applies the value, then fails. */
    @CommandHandler
    void handle(AddThenFail command) {
        apply(new Added(id, command.value()));
        throw new IllegalStateException("fails after adding " + command.value());
    }

    /**
     * Applies {@code before}, sends the nested command and waits for its result, applies {@code after}; returns the
     * nested command's result.
     */
    @CommandHandler
    Object handle(AddAroundNested command) {
        apply(new Added(id, command.before()));
        Object nested = gateway.sendAndWait(command.nested());
        apply(new Added(id, command.after()));
        return nested;
    }

    /** Sends the nested command and waits; returns what it returned, or the failure it raised (caught). */
    @CommandHandler
    Object handle(WaitCatching command) {
        try {
            return gateway.sendAndWait(command.nested());
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** Applies {@code before}, sends the nested command and waits for it, then fails. */
    @CommandHandler
    void handle(AddWaitThenFail command) {
        apply(new Added(id, command.before()));
        gateway.sendAndWait(command.nested());
        throw new IllegalStateException("fails after its nested command, on purpose");
    }

    /**
     * Sends the first command without waiting, then sends the second and waits; returns what the second returned,
     * or the failure it raised (caught).
     */
    @CommandHandler
    Object handle(SendThenWait command) {
        gateway.send(command.first());
        try {
            return gateway.sendAndWait(command.second());
        } catch (RuntimeException e) {
            return e;
        }
    }

    /** Sends the nested command without waiting. */
    @CommandHandler
    void handle(SendWithoutWaiting command) {
        gateway.send(command.nested());
    }

    /** Axon's SimpleCommandBus with this aggregate's handlers subscribed, its events in {@code store}. */
    static SimpleCommandBus onSimpleCommandBus(EventStore store) {
        SimpleCommandBus bus = SimpleCommandBus.builder().build();
        AggregateAnnotationCommandHandler.<Relay>builder()
                                         .aggregateType(Relay.class)
                                         .repository(EventSourcingRepository.builder(Relay.class)
                                                                            .eventStore(store).build())
                                         .build()
                                         .subscribe(bus);
        return bus;
    }

    @EventSourcingHandler
    void on(Created event) {
        this.id = event.relayId();
    }

    @EventSourcingHandler
    void on(Added event) {
        values.add(event.value());
    }

    record Create(@TargetAggregateIdentifier String relayId) {
    }

    record Add(@TargetAggregateIdentifier String relayId, long value) {
    }

    record AddThenFail(@TargetAggregateIdentifier String relayId, long value) {
    }

    record AddAroundNested(@TargetAggregateIdentifier String relayId, long before, Object nested, long after) {
    }

    record WaitCatching(@TargetAggregateIdentifier String relayId, Object nested) {
    }

    record SendWithoutWaiting(@TargetAggregateIdentifier String relayId, Object nested) {
    }

    record AddWaitThenFail(@TargetAggregateIdentifier String relayId, long before, Object nested) {
    }

    record SendThenWait(@TargetAggregateIdentifier String relayId, Object first, Object second) {
    }

    record Created(String relayId) {
    }

    record Added(String relayId, long value) {
    }
}
