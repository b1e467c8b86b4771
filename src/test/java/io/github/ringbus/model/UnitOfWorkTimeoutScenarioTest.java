package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.messaging.timeout.AxonTimeoutException;
import org.axonframework.messaging.timeout.UnitOfWorkTimeoutInterceptor;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ScheduledThreadPoolExecutor;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Axon's Unit of Work timeout (Axon 4.11 on: {@code UnitOfWorkTimeoutInterceptor}, which Spring Boot registers from
 * {@code axon.timeout.*}) on both buses, as Axon's reference guide describes it: a handler that runs past the limit
 * is interrupted, its command fails with {@link AxonTimeoutException} and nothing of it is stored; the commands after
 * it, on the same aggregate and sent at once behind it, run as on {@code SimpleCommandBus}: on the ring the limit of
 * a command never fires on the handler thread once it has gone on to another command.
 */
class UnitOfWorkTimeoutScenarioTest extends OnTwins {

    private static final int TIMEOUT_MILLIS = 300;

    /** Where both buses' limits are scheduled. */
    private final ScheduledThreadPoolExecutor limits = new ScheduledThreadPoolExecutor(1);

    @AfterEach
    void stopLimits() {
        limits.shutdownNow();
    }

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Kettle.class)));
        for (var bus : List.of(twins.axon.commandBus(), twins.ring.commandBus())) {
            // Warnings past the timeout: none logged.
            bus.registerHandlerInterceptor(new UnitOfWorkTimeoutInterceptor(
                    "commandBus", TIMEOUT_MILLIS, TIMEOUT_MILLIS * 10, TIMEOUT_MILLIS, limits,
                    LoggerFactory.getLogger(UnitOfWorkTimeoutScenarioTest.class)));
        }
    }

    private static List<Object> program() {
        List<Object> commands = new ArrayList<>();
        commands.add(new Fill("k"));
        commands.add(new Boil("k", 0));
        commands.add(new Boil("k", 2_000)); // past the limit
        for (int i = 0; i < 5; i++) {
            commands.add(new Boil("k", 50)); // well within it, each
        }
        commands.add(new Fill("l"));
        commands.add(new Boil("l", 2_000));
        commands.add(new Boil("l", 0));
        return commands;
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aHandlerPastTheLimitFailsWithAxonsTimeoutAndTheCommandsAfterItRunAsOnSimpleCommandBus(Topology topology) {
        start(topology);

        List<List<Outcome>> outcomes = twins.sendAll(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(0).get(2).failure()).isEqualTo(AxonTimeoutException.class);
        assertThat(outcomes.get(0).stream().filter(Outcome::failed)).hasSize(2);
        assertThat(twins.storedOnBoth("k").get(1)).isEqualTo(twins.storedOnBoth("k").get(0));
        assertThat(twins.storedOnBoth("l").get(1)).isEqualTo(twins.storedOnBoth("l").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void commandsSentAtOnceBehindOnePastTheLimitAreNotInterruptedByIt(Topology topology) {
        start(topology);

        List<List<Outcome>> outcomes = twins.sendAllAtOnce(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(twins.storedOnBoth("k").get(1)).isEqualTo(twins.storedOnBoth("k").get(0));
        assertThat(twins.storedOnBoth("l").get(1)).isEqualTo(twins.storedOnBoth("l").get(0));
    }

    record Fill(@TargetAggregateIdentifier String id) {
    }

    /** Boils for {@code millis} after applying its event (interruptibly, as a handler waiting on I/O would). */
    record Boil(@TargetAggregateIdentifier String id, int millis) {
    }

    record Filled(String id) {
    }

    record Boiled(int millis) {
    }

    public static class Kettle {

        @AggregateIdentifier
        private String id;
        private int boils;

        public Kettle() {
        }

        @CommandHandler
        public Kettle(Fill command) {
            apply(new Filled(command.id()));
        }

        @CommandHandler
        public int handle(Boil command) throws InterruptedException {
            apply(new Boiled(command.millis()));
            Thread.sleep(command.millis());
            return boils;
        }

        @EventSourcingHandler
        void on(Filled event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Boiled event) {
            boils++;
        }
    }
}
