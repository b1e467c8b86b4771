package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.commandhandling.gateway.IntervalRetryScheduler;
import org.axonframework.common.caching.WeakReferenceCache;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Command retries through a gateway with Axon's {@code IntervalRetryScheduler} (a handler that fails a few times
 * after applying events, then succeeds, or fails for good), and an aggregate configured with Axon's own cache, on the
 * ring as on {@code SimpleCommandBus}. Under Axon's cache a failed command must leave nothing in the cached
 * aggregate; ringbus keeps its own cache and ignores Axon's (with a warning), with the same outcomes.
 */
class RetryAndCacheScenarioTest extends OnTwins {

    private final ScheduledExecutorService retries = Executors.newScheduledThreadPool(2);

    @AfterEach
    void stopRetries() {
        retries.shutdownNow();
    }

    private void start(Topology topology, boolean axonsCache) {
        start(topology, c -> c.registerComponent(Flakiness.class, conf -> new Flakiness())
                              .configureAggregate(axonsCache
                                      ? AggregateConfigurer.defaultConfiguration(Meter.class)
                                                           .configureCache(conf -> new WeakReferenceCache())
                                      : AggregateConfigurer.defaultConfiguration(Meter.class)));
    }

    private CommandGateway retryingGateway(Configuration configuration) {
        return DefaultCommandGateway.builder().commandBus(configuration.commandBus())
                .retryScheduler(IntervalRetryScheduler.builder().retryExecutor(retries).retryInterval(5)
                                                      .maxRetryCount(3).build())
                .build();
    }

    private static List<Object> program() {
        return List.of(new Install("m"), new Read("m", 5, 0), new Read("m", 7, 2), new Read("m", 11, 3),
                       new Read("m", 13, 5), new Read("m", 17, 1), new Read("missing", 1, 0), new Install("n"),
                       new Read("n", 2, 4), new Read("n", 3, 0));
    }

    /** What each caller of a retrying gateway was told, per twin: Axon's, then the ring's. */
    private List<List<Outcome>> sendThroughRetryingGateways(List<Object> commands) {
        List<List<Outcome>> outcomes = List.of(new ArrayList<>(), new ArrayList<>());
        CommandGateway onAxon = retryingGateway(twins.axon);
        CommandGateway onRing = retryingGateway(twins.ring);
        for (Object command : commands) {
            outcomes.get(0).add(outcome(onAxon, command));
            outcomes.get(1).add(outcome(onRing, command));
        }
        return outcomes;
    }

    private static Outcome outcome(CommandGateway gateway, Object command) {
        try {
            return Outcome.of(org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage(
                    (Object) gateway.sendAndWait(command)));
        } catch (RuntimeException failure) {
            return Outcome.of(org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage(
                    failure));
        }
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aCommandThatFailsAFewTimesAfterApplyingSucceedsOnRetryAndStoresOnlyTheLastAttempt(Topology topology) {
        start(topology, false);

        List<List<Outcome>> outcomes = sendThroughRetryingGateways(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(4).failed()).as("five failures: more than three retries").isTrue();
        assertThat(twins.storedOnBoth("m").get(1)).isEqualTo(twins.storedOnBoth("m").get(0));
        assertThat(twins.storedOnBoth("n").get(1)).isEqualTo(twins.storedOnBoth("n").get(0));
        assertThat(attempts(twins.ring)).isEqualTo(attempts(twins.axon));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void underAxonsCacheAFailedCommandLeavesNothingInTheAggregate(Topology topology) {
        start(topology, true);

        List<List<Outcome>> outcomes = sendThroughRetryingGateways(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(twins.storedOnBoth("m").get(1)).isEqualTo(twins.storedOnBoth("m").get(0));
        assertThat(twins.storedOnBoth("n").get(1)).isEqualTo(twins.storedOnBoth("n").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void underAxonsCacheCommandsSentAllAtOnceSeeWhatTheFailedOnesLeft(Topology topology) {
        start(topology, true);
        List<Object> commands = new ArrayList<>();
        commands.add(new Install("m"));
        for (int i = 1; i <= 30; i++) {
            commands.add(new Read("m", i, i % 4 == 0 ? 99 : 0)); // every fourth fails (no retries here)
        }

        List<List<Outcome>> outcomes = twins.sendAllAtOnce(commands);

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(twins.storedOnBoth("m").get(1)).isEqualTo(twins.storedOnBoth("m").get(0));
    }

    private static Map<String, Integer> attempts(Configuration configuration) {
        Map<String, Integer> attempts = new java.util.TreeMap<>();
        configuration.getComponent(Flakiness.class).attempts.forEach((key, count) -> attempts.put(key, count.get()));
        return attempts;
    }

    /** Counts each reading's attempts; a component of each twin's configuration, injected into the handler. */
    public static final class Flakiness {

        final Map<String, AtomicInteger> attempts = new ConcurrentHashMap<>();

        /** @return the number of this attempt at the reading, from 1 */
        int attempt(Read reading) {
            return attempts.computeIfAbsent(reading.id() + "/" + reading.value(), key -> new AtomicInteger())
                           .incrementAndGet();
        }
    }

    record Install(@TargetAggregateIdentifier String id) {
    }

    /** A reading that fails {@code failures} times, each time after applying it, before it is taken. */
    record Read(@TargetAggregateIdentifier String id, int value, int failures) {
    }

    record Installed(String id) {
    }

    record ReadOut(int value, int attempt) {
    }

    public static class Meter {

        @AggregateIdentifier
        private String id;
        private int total;

        public Meter() {
        }

        @CommandHandler
        public Meter(Install command) {
            apply(new Installed(command.id()));
        }

        @CommandHandler
        public int handle(Read command, Flakiness flakiness) {
            int attempt = flakiness.attempt(command);
            apply(new ReadOut(command.value(), attempt));
            if (attempt <= command.failures()) {
                throw new IllegalStateException("reading " + command.value() + " failed, attempt " + attempt);
            }
            return total;
        }

        @EventSourcingHandler
        void on(Installed event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(ReadOut event) {
            total += event.value();
        }
    }
}
