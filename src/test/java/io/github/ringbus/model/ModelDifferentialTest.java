package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.conflictresolution.ConflictResolver;
import org.axonframework.eventsourcing.conflictresolution.Conflicts;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateVersion;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Generated programs over Axon's aggregate model, run on {@code SimpleCommandBus} and on the ring
 * ({@link ConfiguredTwins}), every caller's outcome and every stored stream compared: a polymorphic aggregate (commands
 * of the root's and of a subtype's handlers, failures after {@code apply}, creation of either subtype), commands with
 * an expected version (stale, current or from the future; with a conflict resolver that is asked, or not), one
 * external command class that loads an aggregate of one type or another by its content, and an external handler that
 * creates an aggregate and sends commands to it in the same command; an external handler that declares a transaction
 * ({@code @Transactional}: its commands run whole, after every earlier command, loading from the store) loading one
 * type or another and sending commands it waits for. On both topologies, one command at a time and all at once. The size is jqwik's default (the build's {@code jqwik.tries.default}); the long run sets it higher.
 */
class ModelDifferentialTest {

    private static final List<String> VEHICLES = List.of("v0", "v1", "v2", "v3");
    private static final List<String> GARAGES = List.of("g0", "g1");

    /** A program: the commands, in order; sent one at a time or, on the ring, all at once. */
    record Program(List<Object> commands, boolean allAtOnce) {
    }

    @Property
    void onCompactEveryCallerAndStreamIsAsOnSimpleCommandBus(@ForAll("programs") Program program,
                                                              @ForAll boolean cacheOfOne) {
        check(Topology.COMPACT, cacheOfOne, program);
    }

    @Property
    void onFullEveryCallerAndStreamIsAsOnSimpleCommandBus(@ForAll("programs") Program program,
                                                           @ForAll boolean cacheOfOne) {
        check(Topology.FULL, cacheOfOne, program);
    }

    /** @param cacheOfOne a cache of one aggregate: most commands find theirs in the store, not in memory */
    private static void check(Topology topology, boolean cacheOfOne, Program program) {
        try (ConfiguredTwins twins = new ConfiguredTwins(
                c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Vehicle.class)
                                                             .withSubtypes(Car.class, Truck.class))
                      .configureAggregate(AggregateConfigurer.defaultConfiguration(Garage.class))
                      .registerCommandHandler(Workshop::new)
                      .registerCommandHandler(Inspector::new),
                ring -> ConfiguredTwins.on(topology).apply(cacheOfOne ? ring.cacheSize(1) : ring))) {
            List<List<Outcome>> outcomes = program.allAtOnce() ? twins.sendAllAtOnce(program.commands())
                    : twins.sendAll(program.commands());
            assertThat(outcomes.get(1)).as("outcomes on the ring against SimpleCommandBus")
                                       .isEqualTo(outcomes.get(0));
            for (String id : ids()) {
                assertThat(twins.storedOnBoth(id).get(1)).as("stream of %s", id)
                                                         .isEqualTo(twins.storedOnBoth(id).get(0));
            }
        }
    }

    private static List<String> ids() {
        List<String> ids = new ArrayList<>(VEHICLES);
        ids.addAll(GARAGES);
        return ids;
    }

    @Provide
    Arbitrary<Program> programs() {
        Arbitrary<String> vehicle = Arbitraries.of(VEHICLES);
        Arbitrary<String> garage = Arbitraries.of(GARAGES);
        Arbitrary<Long> small = Arbitraries.longs().between(1, 9);
        Arbitrary<Boolean> fails = Arbitraries.of(false, false, false, true);
        Arbitrary<Object> step = Arbitraries.oneOf(
                vehicle.map(id -> (Object) new BuildCar(id)),
                vehicle.map(id -> (Object) new BuildTruck(id)),
                garage.map(id -> (Object) new OpenGarage(id)),
                Combinators.combine(vehicle, small, fails).as((id, km, fail) -> (Object) new Drive(id, km, fail)),
                Combinators.combine(vehicle, small, fails).as((id, t, fail) -> (Object) new Load(id, t, fail)),
                Combinators.combine(vehicle, Arbitraries.longs().between(0, 8), Arbitraries.of(Ask.values()))
                           .as((id, version, ask) -> (Object) new Tune(id, version, ask)),
                // stale or current on a young aggregate, where the unseen tunings may still be on their way
                Combinators.combine(vehicle, Arbitraries.longs().between(0, 3), Arbitraries.of(Ask.values()))
                           .as((id, version, ask) -> (Object) new Tune(id, version, ask)),
                Combinators.combine(Arbitraries.of(true, false), vehicle, garage, fails)
                           .as((isVehicle, v, g, fail) -> (Object) new Service(isVehicle ? v : g, isVehicle, fail)),
                Combinators.combine(Arbitraries.strings().withCharRange('a', 'c').ofLength(1), small)
                           .as((suffix, touches) -> (Object) new BuildAndDrive("v-new-" + suffix, touches)),
                Combinators.combine(Arbitraries.of(true, false), vehicle, garage, fails)
                           .as((isVehicle, v, g, fail) -> (Object) new Inspect(isVehicle ? v : g, isVehicle, fail)),
                Combinators.combine(vehicle, Arbitraries.longs().between(0, 3))
                           .as((id, drives) -> (Object) new InspectAndDrive(id, drives)));
        return Combinators.combine(step.list().ofMinSize(1).ofMaxSize(24), Arbitraries.of(false, true),
                                   Arbitraries.of(false, false, true))
                          .as((steps, allAtOnce, focused) -> withoutSecondCreations(
                                  focused ? steps.stream().map(ModelDifferentialTest::onFirstVehicle).toList()
                                          : steps, allAtOnce));
    }

    /**
     * The step with every vehicle it names replaced by the first: a program of one vehicle, whose commands follow one
     * another on it while the earlier ones' events are still on their way to the store (all at once).
     */
    private static Object onFirstVehicle(Object step) {
        String first = VEHICLES.get(0);
        if (step instanceof BuildCar) {
            return new BuildCar(first);
        } else if (step instanceof BuildTruck) {
            return new BuildTruck(first);
        } else if (step instanceof Drive d) {
            return new Drive(first, d.km(), d.failAfterwards());
        } else if (step instanceof Load l) {
            return new Load(first, l.tons(), l.failAfterwards());
        } else if (step instanceof Tune t) {
            return new Tune(first, t.version(), t.ask());
        } else if (step instanceof Service s && s.vehicle()) {
            return new Service(first, true, s.failAfterwards());
        } else if (step instanceof Inspect i && i.vehicle()) {
            return new Inspect(first, true, i.failAfterwards());
        } else if (step instanceof InspectAndDrive i) {
            return new InspectAndDrive(first, i.drives());
        }
        return step;
    }

    /**
     * Drops a creation of an aggregate an earlier step of the program creates: Axon's in-memory engine stores a second
     * history where ringbus refuses it (a known difference, docs/design.md), and a database refuses it on both.
     */
    private static Program withoutSecondCreations(List<Object> steps, boolean allAtOnce) {
        List<Object> kept = new ArrayList<>();
        java.util.Set<String> created = new java.util.HashSet<>();
        for (Object step : steps) {
            String creates = step instanceof BuildCar c ? c.id() : step instanceof BuildTruck t ? t.id()
                    : step instanceof OpenGarage g ? g.id() : step instanceof BuildAndDrive b ? b.id() : null;
            if (creates == null || created.add(creates)) {
                kept.add(step);
            }
        }
        return new Program(kept, allAtOnce);
    }

    /** How a versioned command's handler uses its conflict resolver. */
    enum Ask {
        /** never asks it */
        NEVER,
        /** asks, and finds a conflict in any unseen tuning */
        CONFLICT_ON_TUNING,
        /** asks, and finds none */
        NO_CONFLICT
    }

    record BuildCar(@TargetAggregateIdentifier String id) {
    }

    record BuildTruck(@TargetAggregateIdentifier String id) {
    }

    record OpenGarage(@TargetAggregateIdentifier String id) {
    }

    record Drive(@TargetAggregateIdentifier String id, long km, boolean failAfterwards) {
    }

    record Load(@TargetAggregateIdentifier String id, long tons, boolean failAfterwards) {
    }

    record Tune(@TargetAggregateIdentifier String id, @TargetAggregateVersion Long version, Ask ask) {
    }

    /** Handled by the workshop, which loads a vehicle or a garage, as the command says. */
    record Service(@TargetAggregateIdentifier String id, boolean vehicle, boolean failAfterwards) {
    }

    /** Handled by the workshop: creates a car with {@code newInstance}, then drives it with commands it waits for. */
    record BuildAndDrive(String id, long touches) {
    }

    /** As {@link Service}, by a handler that declares a transaction. */
    record Inspect(@TargetAggregateIdentifier String id, boolean vehicle, boolean failAfterwards) {
    }

    /** Loads the vehicle, then drives it by commands it sends and waits for, by a handler that declares one. */
    record InspectAndDrive(@TargetAggregateIdentifier String id, long drives) {
    }

    record Built(String id) {
    }

    record Driven(long km) {
    }

    record Loaded(long tons) {
    }

    record Tuned(long version) {
    }

    record Serviced(String id) {
    }

    abstract static class Vehicle {

        @AggregateIdentifier
        protected String id;
        protected long km;

        @CommandHandler
        long handle(Drive command) {
            apply(new Driven(command.km()));
            if (command.failAfterwards()) {
                throw new IllegalArgumentException("the road is closed");
            }
            return km;
        }

        @CommandHandler
        long handle(Tune command, ConflictResolver conflicts) {
            if (command.ask() != Ask.NEVER) {
                conflicts.detectConflicts(command.ask() == Ask.CONFLICT_ON_TUNING
                                                  ? Conflicts.payloadTypeOf(Tuned.class)
                                                  : Conflicts.payloadTypeOf(Serviced.class).and(l -> false),
                                          d -> new IllegalStateException("tuned meanwhile"));
            }
            apply(new Tuned(command.version()));
            return km;
        }

        String service(boolean fail) {
            apply(new Serviced(id));
            if (fail) {
                throw new IllegalStateException("no parts");
            }
            return "vehicle " + id + " at " + km;
        }

        @EventSourcingHandler
        void on(Built event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Driven event) {
            km += event.km();
        }
    }

    static class Car extends Vehicle {

        Car() {
        }

        Car(String id) {
            apply(new Built(id));
        }

        @CommandHandler
        Car(BuildCar command) {
            apply(new Built(command.id()));
        }
    }

    static class Truck extends Vehicle {

        private long tons;

        Truck() {
        }

        @CommandHandler
        Truck(BuildTruck command) {
            apply(new Built(command.id()));
        }

        @CommandHandler
        long handle(Load command) {
            apply(new Loaded(command.tons()));
            if (command.failAfterwards()) {
                throw new IllegalStateException("overloaded");
            }
            return tons;
        }

        @EventSourcingHandler
        void on(Loaded event) {
            tons += event.tons();
        }
    }

    static class Garage {

        @AggregateIdentifier
        private String id;
        private int services;

        Garage() {
        }

        @CommandHandler
        Garage(OpenGarage command) {
            apply(new Built(command.id()));
        }

        String service(boolean fail) {
            apply(new Serviced(id));
            if (fail) {
                throw new IllegalStateException("closed today");
            }
            return "garage " + id + " " + services;
        }

        @EventSourcingHandler
        void on(Built event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Serviced event) {
            services++;
        }
    }

    /** What both external handlers do: load a vehicle or a garage, by the command's content, and service it. */
    private static String service(Configuration configuration, boolean vehicle, String id, boolean failAfterwards) {
        if (vehicle) {
            return configuration.repository(Vehicle.class).load(id).invoke(loaded -> loaded.service(failAfterwards));
        }
        return configuration.repository(Garage.class).load(id).invoke(loaded -> loaded.service(failAfterwards));
    }

    static class Workshop {

        private final Configuration configuration;

        Workshop(Configuration configuration) {
            this.configuration = configuration;
        }

        @CommandHandler
        String handle(Service command) {
            return service(configuration, command.vehicle(), command.id(), command.failAfterwards());
        }

        @CommandHandler
        long handle(BuildAndDrive command) throws Exception {
            configuration.repository(Vehicle.class).newInstance(() -> new Car(command.id()));
            long km = 0;
            for (long i = 0; i < command.touches(); i++) {
                km = configuration.commandGateway().sendAndWait(new Drive(command.id(), 1, false));
            }
            return km;
        }
    }

    /** An external handler that declares a transaction (no transaction manager here: it only changes the route). */
    @jakarta.transaction.Transactional
    static class Inspector {

        private final Configuration configuration;

        Inspector(Configuration configuration) {
            this.configuration = configuration;
        }

        @CommandHandler
        String handle(Inspect command) {
            return service(configuration, command.vehicle(), command.id(), command.failAfterwards());
        }

        @CommandHandler
        long handle(InspectAndDrive command) {
            long km = configuration.repository(Vehicle.class).load(command.id()).invoke(vehicle -> vehicle.km);
            for (long i = 0; i < command.drives(); i++) {
                km = configuration.commandGateway().sendAndWait(new Drive(command.id(), 1, false));
            }
            return km;
        }
    }
}
