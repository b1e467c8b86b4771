package io.github.ringbus.examples.polymorphic;

import jakarta.persistence.DiscriminatorValue;
import jakarta.persistence.Entity;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** A truck: a vehicle with a load, and a command of its own. */
@Entity
@Aggregate
@DiscriminatorValue("truck")
public class Truck extends Vehicle {

    public record BuildTruck(@TargetAggregateIdentifier String vehicleId) {
    }

    public record LoadTruck(@TargetAggregateIdentifier String vehicleId, long tons, boolean failAfterwards) {
    }

    public record TruckBuilt(String vehicleId) {
    }

    public record Loaded(String vehicleId, long tons) {
    }

    private long tons;

    protected Truck() {
    }

    @CommandHandler
    public Truck(BuildTruck command) {
        this.vehicleId = command.vehicleId();
        apply(new TruckBuilt(vehicleId));
    }

    @CommandHandler
    public long handle(LoadTruck command) {
        tons += command.tons();
        apply(new Loaded(vehicleId, command.tons()));
        if (command.failAfterwards()) {
            throw new IllegalArgumentException("too heavy");
        }
        return tons;
    }
}
