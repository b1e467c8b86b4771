package io.github.ringbus.examples.axonserver;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.examples.axonserver.AccountMessages.Deposit;
import io.github.ringbus.examples.axonserver.AccountMessages.OpenAccount;
import io.github.ringbus.examples.axonserver.AccountMessages.Withdraw;
import org.axonframework.axonserver.connector.command.AxonServerCommandBus;
import org.axonframework.axonserver.connector.event.axon.AxonServerEventStore;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The application with Axon's starter as it comes and ringbus on the class path, and no setting but where Axon Server
 * runs (here the stand-in): Axon Server's command bus routes the commands through the server to ringbus, the local
 * segment, whose store stage appends their events to Axon Server; a tracking processor reads them back.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.NONE)
class StarterDefaultsTest {

    /** Runs as long as the test JVM: Spring keeps the application context, still connected, until the JVM ends. */
    private static final AxonServerStandIn SERVER = AxonServerStandIn.start();

    @DynamicPropertySource
    static void axonServer(DynamicPropertyRegistry properties) {
        properties.add("axon.axonserver.servers", SERVER::address);
    }

    @Autowired
    private CommandBus commandBus;
    @Autowired
    private EventStore eventStore;
    @Autowired
    private CommandGateway gateway;
    @Autowired
    private Balances balances;

    @Test
    void axonServerIsTheCommandBusAndTheEventStoreAndRingbusItsLocalSegment() {
        assertThat(commandBus).isInstanceOf(AxonServerCommandBus.class);
        assertThat(((AxonServerCommandBus) commandBus).localSegment()).isInstanceOf(RingCommandBus.class);
        assertThat(eventStore).isInstanceOf(AxonServerEventStore.class);
    }

    @Test
    void commandsRoutedThroughAxonServerRunOnTheRingAndTheirEventsAreStoredThere() throws Exception {
        int dispatchedBefore = SERVER.dispatchedCommands();
        gateway.sendAndWait(new OpenAccount("boot-1"));
        List<CompletableFuture<Object>> deposits = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            deposits.add(gateway.send(new Deposit("boot-1", 1)));
        }
        for (CompletableFuture<Object> deposit : deposits) {
            deposit.get(30, TimeUnit.SECONDS);
        }
        Throwable refused = catchThrowable(() -> gateway.sendAndWait(new Withdraw("boot-1", 1_000)));

        assertThat(refused).hasMessageContaining("Insufficient funds on boot-1: 200 < 1000");
        assertThat(SERVER.dispatchedCommands() - dispatchedBefore).isEqualTo(202);
        assertThat(SERVER.eventsOf("boot-1")).hasSize(201);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Long.valueOf(200).equals(balances.balanceOf("boot-1")) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(balances.balanceOf("boot-1")).as("read back by a tracking processor").isEqualTo(200L);
    }
}
