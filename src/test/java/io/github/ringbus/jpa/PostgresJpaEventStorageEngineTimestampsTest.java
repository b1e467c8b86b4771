package io.github.ringbus.jpa;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.LongRange;
import net.jqwik.api.constraints.Size;
import org.axonframework.common.DateTimeUtils;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.junit.jupiter.api.Test;

/**
 * The engine's timestamp text ({@link PostgresJpaEventStorageEngine.Timestamps}) is Axon's
 * {@link DateTimeUtils#formatInstant}, character for character, for one formatter reused over a batch's timestamps in
 * any order and at any instant (before 1970, past the year 9999, every nanosecond of a second).
 */
class PostgresJpaEventStorageEngineTimestampsTest {

    @Property(tries = 300)
    void aBatchsTimestampsAreWrittenAsAxonWritesThem(
            @ForAll @Size(min = 1, max = 50) List<@LongRange(min = -62_000_000_000L, max = 300_000_000_000L) Long> seconds,
            @ForAll @Size(min = 1, max = 50) List<@LongRange(min = 0, max = 999_999_999) Long> nanos) {
        PostgresJpaEventStorageEngine.Timestamps timestamps = new PostgresJpaEventStorageEngine.Timestamps();
        for (int i = 0; i < seconds.size(); i++) {
            // Neighbours share their second now and then, as a batch's events mostly do.
            long second = i > 0 && nanos.get(i % nanos.size()) % 3 == 0 ? seconds.get(i - 1) : seconds.get(i);
            Instant timestamp = Instant.ofEpochSecond(second, nanos.get(i % nanos.size()));
            assertThat(timestamps.format(timestamp)).isEqualTo(DateTimeUtils.formatInstant(timestamp));
        }
    }

    @Test
    void theEdgesOfASecondAreAxons() {
        PostgresJpaEventStorageEngine.Timestamps timestamps = new PostgresJpaEventStorageEngine.Timestamps();
        for (Instant timestamp : List.of(Instant.EPOCH, Instant.ofEpochSecond(-1, 999_999_999),
                                         Instant.ofEpochSecond(0, 999_999), Instant.ofEpochSecond(0, 1_000_000),
                                         Instant.parse("9999-12-31T23:59:59.999999999Z"),
                                         Instant.parse("+10000-01-01T00:00:00Z"),
                                         Instant.parse("-0001-06-01T12:00:00.5Z"))) {
            assertThat(timestamps.format(timestamp)).isEqualTo(DateTimeUtils.formatInstant(timestamp));
        }
    }

    /** A subclass that makes its own entities gets Axon's own append (its rows are not Axon's entity's). */
    @Test
    void anEngineThatMakesItsOwnEntitiesIsToldApart() {
        class OwnEntities extends PostgresJpaEventStorageEngine {
            OwnEntities(Builder builder) {
                super(builder);
            }

            @Override
            protected Object createEventEntity(org.axonframework.eventhandling.EventMessage<?> eventMessage,
                                               org.axonframework.serialization.Serializer serializer) {
                return super.createEventEntity(eventMessage, serializer);
            }
        }
        class Below extends OwnEntities {
            Below(Builder builder) {
                super(builder);
            }
        }

        assertThat(PostgresJpaEventStorageEngine.overridesCreateEventEntity(Below.class)).isTrue();
        assertThat(PostgresJpaEventStorageEngine.overridesCreateEventEntity(PostgresJpaEventStorageEngine.class))
                .isFalse();
        assertThat(PostgresJpaEventStorageEngine.overridesCreateEventEntity(JpaEventStorageEngine.class)).isFalse();
    }
}
