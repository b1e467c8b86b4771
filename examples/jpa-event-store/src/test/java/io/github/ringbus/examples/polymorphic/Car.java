package io.github.ringbus.examples.polymorphic;

import jakarta.persistence.DiscriminatorValue;
import jakarta.persistence.Entity;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/** A car: a vehicle with nothing of its own but its creation. */
@Entity
@Aggregate
@DiscriminatorValue("car")
public class Car extends Vehicle {

    public record BuildCar(@TargetAggregateIdentifier String vehicleId) {
    }

    public record CarBuilt(String vehicleId) {
    }

    protected Car() {
    }

    @CommandHandler
    public Car(BuildCar command) {
        this.vehicleId = command.vehicleId();
        apply(new CarBuilt(vehicleId));
    }
}
