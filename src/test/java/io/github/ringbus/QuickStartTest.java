package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.MetaData;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The README's quick start: its configuration runs here on the test fixtures, with the metadata of Axon's default bus;
 * the README shows {@code examples/quick-start} (built and run by {@code ./mvnw verify}) whole.
 */
class QuickStartTest {

    @Test
    void quickStartRunsAndDeposits() {
        Configuration axon = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                        .storageEngine(new InMemoryEventStorageEngine())
                        .build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder()
                        .axonConfiguration(c)
                        .build())
                .start();

        axon.commandGateway().sendAndWait(new Open("acc-1"));
        long balance = axon.commandGateway().sendAndWait(new Deposit("acc-1", 100));

        axon.shutdown();
        assertThat(balance).isEqualTo(100L);
    }

    /**
     * The quick start's events carry the command's correlation data exactly as on Axon's default bus: the metadata
     * the command was sent with that a correlation data provider passes on ({@code traceId}), and the command's
     * identifier as {@code correlationId}.
     */
    @Test
    void quickStartStoresTheSameEventMetadataAsAxonsDefaultBus() {
        Map<String, Object> onRing = metadataOfStoredDeposit(
                c -> RingCommandBus.builder().axonConfiguration(c).build());
        Map<String, Object> onAxonsBus = metadataOfStoredDeposit(null);

        assertThat(onRing).containsEntry("traceId", "T-1").containsKey("correlationId");
        assertThat(onRing.keySet()).isEqualTo(onAxonsBus.keySet());
        assertThat(onRing.get("traceId")).isEqualTo(onAxonsBus.get("traceId"));
    }

    /**
     * Runs the quick start's deposit, sent with metadata {@code traceId=T-1} and a fixed command identifier, on the
     * given bus (null: Axon's default bus), and returns the metadata of the event it stored; the correlation
     * identifier is replaced by whether it names the command.
     */
    private static Map<String, Object> metadataOfStoredDeposit(Function<Configuration, CommandBus> bus) {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        Configurer configurer = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                .configureAggregate(Account.class);
        if (bus != null) {
            configurer.configureCommandBus(bus);
        }
        Configuration axon = configurer.start();
        try {
            axon.commandGateway().sendAndWait(new Open("acc-1"));
            GenericCommandMessage<Deposit> deposit = new GenericCommandMessage<>(
                    new GenericMessage<>("deposit-1", new Deposit("acc-1", 100), MetaData.with("traceId", "T-1")),
                    Deposit.class.getName());
            axon.commandGateway().sendAndWait(deposit);
            DomainEventMessage<?> stored = engine.readEvents("acc-1").asStream()
                                                 .filter(event -> event.getPayload() instanceof Deposited)
                                                 .findFirst().orElseThrow();
            Map<String, Object> metadata = new java.util.TreeMap<>(stored.getMetaData());
            metadata.computeIfPresent("correlationId", (key, value) -> "deposit-1".equals(value));
            return metadata;
        } finally {
            axon.shutdown();
        }
    }

    /** The README shows {@code examples/quick-start}'s program whole, imports and classes included. */
    @Test
    void readmeShowsTheQuickStartExampleWhole() throws IOException {
        String example = Files.readString(Path.of("examples/quick-start/src/main/java/quickstart/QuickStart.java"));
        String readme = Files.readString(Path.of("README.md"));

        assertThat(readme).contains("```java\n" + example + "```");
    }
}
