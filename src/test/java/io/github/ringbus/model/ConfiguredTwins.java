package io.github.ringbus.model;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * One Axon application built twice from the same configuration: once as Axon builds it (its
 * {@code SimpleCommandBus} and {@code EmbeddedEventStore}), once with ringbus as the command bus and its event store
 * (built from the configuration as the README shows, {@code RingCommandBus.builder().axonConfiguration(c)}: its
 * event store, transaction manager, message monitor and correlation data providers),
 * each over an in-memory engine of its own. A scenario sends the same commands to both and compares what each caller
 * was told ({@link Outcome}) and what each store holds ({@link #storedOnBoth}). The oracle is Axon's bus: whatever it
 * does, the ring must do.
 */
final class ConfiguredTwins implements AutoCloseable {

    final InMemoryEventStorageEngine axonEngine = new InMemoryEventStorageEngine();
    final InMemoryEventStorageEngine ringEngine = new InMemoryEventStorageEngine();
    final Configuration axon;
    final Configuration ring;

    /** @param application configures the application (aggregates, handlers, interceptors); called once per twin */
    ConfiguredTwins(Consumer<Configurer> application) {
        this(application, ring -> ring);
    }

    /**
     * @param application configures the application (aggregates, handlers, interceptors); called once per twin
     * @param ringSettings settings of the ring's builder (topology, threads), beyond its event store
     */
    ConfiguredTwins(Consumer<Configurer> application, UnaryOperator<RingCommandBus.Builder> ringSettings) {
        Configurer axonConfigurer = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> EmbeddedEventStore.builder().storageEngine(axonEngine).build());
        application.accept(axonConfigurer);
        Configurer ringConfigurer = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(ringEngine).build())
                .configureCommandBus(c -> ringSettings.apply(RingCommandBus.builder().axonConfiguration(c)).build());
        application.accept(ringConfigurer);
        this.axon = axonConfigurer.start();
        this.ring = ringConfigurer.start();
    }

    /** Sends the command on both buses, one after the other, and waits for each. */
    Outcome[] send(Object command) {
        return new Outcome[]{Outcome.of(sendTo(axon, command)), Outcome.of(sendTo(ring, command))};
    }

    /** Sends each command on both and returns, per bus, the outcomes in order: Axon's first, then the ring's. */
    List<List<Outcome>> sendAll(List<?> commands) {
        List<Outcome> onAxon = new ArrayList<>();
        List<Outcome> onRing = new ArrayList<>();
        for (Object command : commands) {
            Outcome[] both = send(command);
            onAxon.add(both[0]);
            onRing.add(both[1]);
        }
        return List.of(onAxon, onRing);
    }

    /**
     * Sends the commands to Axon's bus one after the other, and to the ring all at once (each dispatched before the
     * first completes, so later ones run on events still on their way to the store); returns, per bus, the outcomes
     * in order: Axon's first, then the ring's.
     */
    List<List<Outcome>> sendAllAtOnce(List<?> commands) {
        List<Outcome> onAxon = new ArrayList<>();
        for (Object command : commands) {
            onAxon.add(Outcome.of(sendTo(axon, command)));
        }
        List<FutureCallback<Object, Object>> pending = new ArrayList<>();
        for (Object command : commands) {
            FutureCallback<Object, Object> callback = new FutureCallback<>();
            ring.commandBus().dispatch(asCommandMessage(command), callback);
            pending.add(callback);
        }
        List<Outcome> onRing = new ArrayList<>();
        for (FutureCallback<Object, Object> callback : pending) {
            onRing.add(Outcome.of(callback.getResult()));
        }
        return List.of(onAxon, onRing);
    }

    private static CommandResultMessage<?> sendTo(Configuration configuration, Object command) {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        configuration.commandBus().dispatch(asCommandMessage(command), callback);
        return callback.getResult();
    }

    /** @return the events stored for the aggregate: Axon's twin first, then the ring's */
    List<List<Stored>> storedOnBoth(String aggregateIdentifier) {
        return List.of(stored(axonEngine, aggregateIdentifier), stored(ringEngine, aggregateIdentifier));
    }

    static List<Stored> stored(InMemoryEventStorageEngine engine, String aggregateIdentifier) {
        return engine.readEvents(aggregateIdentifier).asStream()
                     .map(e -> new Stored(e.getType(), e.getSequenceNumber(), e.getPayload()))
                     .collect(Collectors.toList());
    }

    /** The ring's settings for a topology: {@code FULL} with two handler threads, or {@code COMPACT}. */
    static UnaryOperator<RingCommandBus.Builder> on(io.github.ringbus.Topology topology) {
        return topology == io.github.ringbus.Topology.FULL
                ? ring -> ring.topology(topology).handlerThreads(2)
                : ring -> ring.topology(topology).handlerThreads(1).storeThreads(1);
    }

    @Override
    public void close() {
        ring.shutdown();
        axon.shutdown();
    }

    /** A stored event as a comparison sees it: its aggregate type name, sequence number and payload. */
    record Stored(String type, long sequenceNumber, Object payload) {
    }

    /**
     * What a caller was told: the result, or the exception's class and message. Two outcomes are equal when both
     * succeeded with equal results, or both failed with the same exception class.
     */
    record Outcome(Object result, Class<?> failure, String message) {

        static Outcome of(CommandResultMessage<?> result) {
            if (result.isExceptional()) {
                Throwable failure = result.exceptionResult();
                return new Outcome(null, failure.getClass(), failure.getMessage());
            }
            return new Outcome(result.getPayload(), null, null);
        }

        boolean failed() {
            return failure != null;
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof Outcome that && Objects.equals(result, that.result)
                    && Objects.equals(failure, that.failure);
        }

        @Override
        public int hashCode() {
            return Objects.hash(result, failure);
        }

        @Override
        public String toString() {
            return failed() ? failure.getSimpleName() + "(" + message + ")" : "ok(" + result + ")";
        }
    }
}
