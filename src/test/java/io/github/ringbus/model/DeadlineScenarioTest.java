package io.github.ringbus.model;

import io.github.ringbus.Topology;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.ConfigurationScopeAwareProvider;
import org.axonframework.deadline.DeadlineManager;
import org.axonframework.deadline.SimpleDeadlineManager;
import org.axonframework.deadline.annotation.DeadlineHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Deadlines on aggregates, on the ring as on {@code SimpleCommandBus} with Axon's {@code SimpleDeadlineManager}: a
 * deadline that a creation command without a target identifier schedules at once (or in the past) reaches the
 * aggregate it created, even when it fires before that command's events are stored.
 */
class DeadlineScenarioTest extends OnTwins {

    private static final int TIMERS = 10;
    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Timer.class))
                      .registerComponent(DeadlineManager.class, conf -> SimpleDeadlineManager.builder()
                              .scopeAwareProvider(new ConfigurationScopeAwareProvider(conf)).build()));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aDeadlineACreationWithoutTargetSchedulesInThePastReachesTheAggregate(Topology topology) throws Exception {
        start(topology);
        for (int i = 0; i < TIMERS; i++) {
            twins.send(new CreateTimer("t-" + i, -1_000));
        }

        for (int i = 0; i < TIMERS; i++) {
            assertThat(awaitTwoEvents(twins.axonEngine, "t-" + i)).as("on SimpleCommandBus, t-%d", i).isEqualTo(2);
            assertThat(awaitTwoEvents(twins.ringEngine, "t-" + i)).as("on the ring, t-%d", i).isEqualTo(2);
        }
    }

    private static int awaitTwoEvents(org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine
                                              engine, String id) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        int stored;
        while ((stored = ConfiguredTwins.stored(engine, id).size()) < 2 && System.nanoTime() < until) {
            Thread.sleep(5);
        }
        return stored;
    }

    /** Names no target: the aggregate's identifier is known once its constructor ran. */
    record CreateTimer(String name, long inMillis) {
    }

    record Created(String id) {
    }

    record Fired(String id) {
    }

    static class Timer {

        @AggregateIdentifier
        private String id;

        Timer() {
        }

        @CommandHandler
        Timer(CreateTimer command, DeadlineManager deadlines) {
            apply(new Created(command.name()));
            deadlines.schedule(Duration.ofMillis(command.inMillis()), "ring");
        }

        @DeadlineHandler(deadlineName = "ring")
        void ring() {
            apply(new Fired(id));
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
        }
    }
}
