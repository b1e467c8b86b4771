package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;

import java.lang.ref.WeakReference;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * A bus that was shut down holds on to nothing and nothing holds on to it: its ring (4,096 slots of preallocated
 * objects by default) can be collected once the application drops it, after creation and instance commands (an
 * instance command once left the invoker's plan in a {@code ClassValue} of the aggregate class, and with it the bus). An application that builds and shuts down
 * configurations (tests, a restart in the same JVM) must not keep every ring it ever built.
 */
class ShutDownBusIsCollectedTest {

    @Test
    void aBusBuiltByHandThatWasShutDownIsCollected() throws Exception {
        WeakReference<RingCommandBus> bus = useAndShutDownABus();

        assertThat(collected(bus)).as("the shut-down bus was collected").isTrue();
    }

    @Test
    void aBusOfAnAxonConfigurationThatWasShutDownIsCollected() throws Exception {
        WeakReference<Object> bus = useAndShutDownAConfiguration();

        assertThat(collected(bus)).as("the shut-down configuration's bus was collected").isTrue();
    }

    private static WeakReference<RingCommandBus> useAndShutDownABus() throws Exception {
        RingEventStore store = RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        RingCommandBus bus = RingCommandBus.builder().eventStore(store).build();
        bus.registerAggregate(Account.class);
        bus.start();
        FutureCallback<Object, Object> opened = new FutureCallback<>();
        bus.dispatch(asCommandMessage(new Open("a")), opened);
        opened.get(10, TimeUnit.SECONDS);
        FutureCallback<Object, Object> deposited = new FutureCallback<>();
        bus.dispatch(asCommandMessage(new Deposit("a", 5)), deposited);
        deposited.get(10, TimeUnit.SECONDS);
        bus.dispatch(asCommandMessage(new Open("b")), (command, result) -> {
        });
        bus.shutdown();
        return new WeakReference<>(bus);
    }

    private static WeakReference<Object> useAndShutDownAConfiguration() {
        Configuration configuration = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine())
                                                        .build())
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .configureAggregate(AggregateConfigurer.defaultConfiguration(Account.class))
                .start();
        configuration.commandGateway().sendAndWait(new Open("a"));
        configuration.commandGateway().sendAndWait(new Deposit("a", 5));
        configuration.commandGateway().send(new Open("b")).join();
        Object bus = configuration.commandBus();
        configuration.shutdown();
        return new WeakReference<>(bus);
    }

    private static boolean collected(WeakReference<?> reference) throws InterruptedException {
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (reference.get() != null && System.nanoTime() < until) {
            System.gc();
            Thread.sleep(50);
        }
        return reference.get() == null;
    }
}
