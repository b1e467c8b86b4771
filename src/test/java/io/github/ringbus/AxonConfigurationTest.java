package io.github.ringbus;

import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** An aggregate configured the plain Axon way runs through the ring with no other code. */
class AxonConfigurationTest {

    private Configuration configuration;

    @AfterEach
    void shutDown() {
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    private Configuration start() {
        configuration = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                                                       .storageEngine(new InMemoryEventStorageEngine())
                                                       .build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .start();
        return configuration;
    }

    @Test
    void configuredAggregateGetsARingRepository() {
        Configuration config = start();

        assertThat(config.repository(Account.class)).isInstanceOf(RingRepository.class);
    }

    @Test
    void commandsSentThroughTheGatewayAreHandledAndStored() {
        Configuration config = start();
        CommandGateway gateway = config.commandGateway();

        gateway.sendAndWait(new Open("a"));
        Object balance = gateway.sendAndWait(new Deposit("a", 42));

        assertThat(balance).isEqualTo(42L);
        assertThat(config.eventStore().readEvents("a").asStream().<Object>map(EventMessage::getPayload)
                         .collect(Collectors.toList()))
                .containsExactly(new Opened("a"), new Deposited("a", 42));
    }

    @Test
    void commandsRunOnRingbusHandlerThreads() {
        Configuration config = start();
        List<String> threads = new CopyOnWriteArrayList<>();
        config.commandBus().registerHandlerInterceptor((unitOfWork, chain) -> {
            threads.add(Thread.currentThread().getName());
            return chain.proceed();
        });

        config.commandGateway().sendAndWait(new Open("a"));

        assertThat(threads).singleElement().matches(StageThreads::handles);
    }

    @Test
    void axonLifecycleStartsAndStopsTheBus() {
        Configuration config = start();
        RingCommandBus bus = (RingCommandBus) config.commandBus();
        assertThat(bus.isRunning()).isTrue();

        config.shutdown();
        configuration = null;

        assertThat(bus.isRunning()).isFalse();
    }

    @Test
    void otherCommandBusesKeepAxonsDefaultRepository() {
        configuration = DefaultConfigurer.defaultConfiguration()
                .configureEmbeddedEventStore(c -> new InMemoryEventStorageEngine())
                .configureAggregate(Account.class)
                .start();

        assertThat(configuration.repository(Account.class)).isNotInstanceOf(RingRepository.class);
        configuration.commandGateway().sendAndWait(new Open("a"));
    }

    @Test
    void embeddedEventStoreWorksWithStoreAndPublishInOneStage() {
        configuration = DefaultConfigurer.defaultConfiguration()
                .configureEmbeddedEventStore(c -> new InMemoryEventStorageEngine())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .start();
        List<Object> seen = new CopyOnWriteArrayList<>();
        configuration.eventBus().subscribe(events -> events.forEach(e -> seen.add(e.getPayload())));

        configuration.commandGateway().sendAndWait(new Open("a"));

        assertThat(seen).containsExactly(new Opened("a"));
        assertThat(configuration.repository(Account.class)).isInstanceOf(RingRepository.class);
    }
}
