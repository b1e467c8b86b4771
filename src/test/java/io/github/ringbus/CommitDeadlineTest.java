package io.github.ringbus;

import io.github.ringbus.fixtures.FaultyStorageEngine;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.serialization.json.JacksonSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which command of a group is too late to commit: the first, in ring order, with an event stamped more than half the
 * engine's gap timeout ago on Axon's event clock; and which stores have such a bound at all.
 */
class CommitDeadlineTest {

    private static final Instant NOW = Instant.parse("2026-12-02T12:00:00Z");

    @AfterEach
    void restoreClock() {
        GenericEventMessage.clock = Clock.systemUTC();
    }

    @Test
    void theFirstCommandWithAnEventOlderThanHalfTheGapTimeoutIsLate() {
        CommitDeadline deadline = new CommitDeadline(60_000);
        CommandSlot young = slotWithEventsAt(NOW.minusSeconds(29));
        CommandSlot old = slotWithEventsAt(NOW.minusSeconds(1), NOW.minusSeconds(31));
        CommandSlot older = slotWithEventsAt(NOW.minusSeconds(50));
        GenericEventMessage.clock = Clock.fixed(NOW, ZoneOffset.UTC);

        assertThat(deadline.bound()).isEqualTo(Duration.ofSeconds(30));
        assertThat(deadline.firstLate(List.of(young, old, older))).isSameAs(old);
        assertThat(deadline.firstLate(List.of(young, new CommandSlot(null)))).isNull();
        assertThat(deadline.failure(old)).hasMessageContaining("applied 31000 ms ago")
                                         .hasMessageContaining("gapTimeout of 60000 ms");
    }

    @Test
    void onlyAxonsJdbcAndJpaEnginesHaveADeadline() {
        assertThat(CommitDeadline.forStore(EmbeddedEventStore.builder()
                                                             .storageEngine(new FaultyStorageEngine()).build()))
                .as("an engine of its own").isNull();
        assertThat(CommitDeadline.forStore(EmbeddedEventStore.builder()
                                                             .storageEngine(new InMemoryEventStorageEngine()).build()))
                .as("Axon's in-memory engine").isNull();
        JdbcEventStorageEngine jdbc = JdbcEventStorageEngine.builder()
                                                            .connectionProvider(() -> {
                                                                throw new IllegalStateException("never connected");
                                                            })
                                                            .transactionManager(
                                                                    org.axonframework.common.transaction
                                                                            .NoTransactionManager.INSTANCE)
                                                            .eventSerializer(JacksonSerializer.defaultSerializer())
                                                            .snapshotSerializer(JacksonSerializer.defaultSerializer())
                                                            .gapTimeout(4_000)
                                                            .build();
        CommitDeadline deadline = CommitDeadline.forStore(EmbeddedEventStore.builder().storageEngine(jdbc).build());
        assertThat(deadline).isNotNull();
        assertThat(deadline.bound()).isEqualTo(Duration.ofSeconds(2));
    }

    private static CommandSlot slotWithEventsAt(Instant... timestamps) {
        CommandSlot slot = new CommandSlot(null);
        slot.command = GenericCommandMessage.asCommandMessage("deposit");
        for (Instant timestamp : timestamps) {
            GenericEventMessage.clock = Clock.fixed(timestamp, ZoneOffset.UTC);
            slot.events.add(new GenericDomainEventMessage<>("Account", "a", slot.events.size(), "payload"));
        }
        return slot;
    }
}
