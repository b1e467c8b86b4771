package io.github.ringbus.examples.polymorphic;

import jakarta.persistence.DiscriminatorColumn;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Inheritance;
import jakarta.persistence.InheritanceType;
import jakarta.persistence.Table;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * A state-stored polymorphic aggregate: an abstract JPA entity (one table for every kind) whose subtypes are
 * aggregates of their own, which Axon loads and saves with its {@code GenericJpaRepository} and one model of the
 * whole family. The root's handler runs on every kind; a subtype's handler on that kind only.
 */
@Entity
@Aggregate
@Inheritance(strategy = InheritanceType.SINGLE_TABLE)
@DiscriminatorColumn(name = "kind")
@Table(name = "state_stored_vehicle")
public abstract class Vehicle {

    public record Drive(@TargetAggregateIdentifier String vehicleId, long km, boolean failAfterwards) {
    }

    public record Odometer(@TargetAggregateIdentifier String vehicleId) {
    }

    public record Driven(String vehicleId, long km) {
    }

    @Id
    @AggregateIdentifier
    protected String vehicleId;
    protected long km;

    protected Vehicle() {
    }

    @CommandHandler
    public long handle(Drive command) {
        km += command.km();
        apply(new Driven(vehicleId, command.km()));
        if (command.failAfterwards()) {
            throw new IllegalArgumentException("the road is closed");
        }
        return km;
    }

    @CommandHandler
    public long handle(Odometer command) {
        return km;
    }
}
