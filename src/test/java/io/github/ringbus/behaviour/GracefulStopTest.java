package io.github.ringbus.behaviour;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.EventHandler;
import org.axonframework.eventhandling.TrackingEventProcessorConfiguration;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application stopped while a tracking or pooled streaming processor (a saga, a process manager) still works through its events and
 * sends a command for each: every command it sends while Axon stops it is handled, as on {@code SimpleCommandBus}
 * (the ring stops taking commands only once Axon's event processors, deadline managers and inbound connectors
 * stopped: {@code Phase.OUTBOUND_COMMAND_CONNECTORS + 1}). Before, the ring shut down ahead of the processors and the
 * commands they sent while finishing their batch failed with {@code ShutdownInProgressException}.
 */
class GracefulStopTest {

    private static final int DEPOSITS = 300;

    @Test
    void everyCommandATrackingProcessorSendsWhileTheApplicationStopsIsHandledAsOnSimpleCommandBus()
            throws InterruptedException {
        assertEveryRelayedCommandHandled(false);
    }

    @Test
    void everyCommandAPooledStreamingProcessorSendsWhileTheApplicationStopsIsHandledAsOnSimpleCommandBus()
            throws InterruptedException {
        assertEveryRelayedCommandHandled(true);
    }

    private static void assertEveryRelayedCommandHandled(boolean pooled) throws InterruptedException {
        List<Object> onSimple = stopWhileRelaying(configurer -> configurer, pooled);
        List<Object> onRing = stopWhileRelaying(configurer -> configurer.configureCommandBus(
                c -> RingCommandBus.builder().axonConfiguration(c).build()), pooled);

        assertThat(onSimple).as("on SimpleCommandBus").isNotEmpty().allMatch("handled"::equals);
        assertThat(onRing).as("on ringbus: what each command the processor sent while stopping came to")
                          .isNotEmpty().allMatch("handled"::equals);
    }

    /**
     * Deposits on one account; a tracking processor relays each to a second account, slowly; the application stops
     * once the processor relayed a few. @return the outcome of each relayed command
     */
    private static List<Object> stopWhileRelaying(UnaryOperator<Configurer> bus, boolean pooled)
            throws InterruptedException {
        Relay relay = new Relay();
        Configurer configurer = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine())
                                                       .build())
                .configureAggregate(Account.class);
        if (pooled) {
            configurer.eventProcessing().registerPooledStreamingEventProcessor(
                    "relay", c -> c.eventStore(), (c, builder) -> builder.batchSize(100));
        } else {
            configurer.eventProcessing().registerTrackingEventProcessor(
                    "relay", c -> c.eventStore(),
                    c -> TrackingEventProcessorConfiguration.forSingleThreadedProcessing().andBatchSize(100));
        }
        configurer.eventProcessing()
                  .assignHandlerInstancesMatching("relay", handler -> handler instanceof Relay)
                  .registerEventHandler(c -> relay);
        Configuration configuration = bus.apply(configurer).start();
        relay.gateway = configuration.commandGateway();
        CommandGateway gateway = configuration.commandGateway();
        gateway.sendAndWait(new Open("source"));
        gateway.sendAndWait(new Open("target"));
        for (int i = 0; i < DEPOSITS; i++) {
            gateway.send(new Deposit("source", 1));
        }
        assertThat(relay.relayedSome.await(30, TimeUnit.SECONDS)).isTrue();
        configuration.shutdown();
        return relay.outcomes;
    }

    /** The tracking processor's handler: relays each deposit on the source account to the target account. */
    static final class Relay {

        volatile CommandGateway gateway;
        final List<Object> outcomes = new CopyOnWriteArrayList<>();
        final CountDownLatch relayedSome = new CountDownLatch(5);

        @EventHandler
        void on(Deposited deposited) throws InterruptedException {
            if (!deposited.accountId().equals("source")) {
                return;
            }
            Thread.sleep(2); // a processor that takes its time: it is mid-batch when the application stops
            try {
                gateway.sendAndWait(new Deposit("target", deposited.amount()));
                outcomes.add("handled");
            } catch (RuntimeException refused) {
                outcomes.add(refused.toString());
            }
            relayedSome.countDown();
        }
    }
}
