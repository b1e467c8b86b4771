package io.github.ringbus.behaviour;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A bad setting is refused where it is given, by the setter (or by {@code build()} for a missing event store), with
 * an {@link AxonConfigurationException} that names the setting and the value it refused.
 */
class BuilderValidationTest {

    private final RingEventStore eventStore =
            RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();

    @Test
    void buildWithoutAnEventStoreIsRefusedNamingTheEventStore() {
        RingCommandBus.Builder builder = RingCommandBus.builder();

        assertThatThrownBy(builder::build)
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("eventStore is required");
    }

    @Test
    void nullEventStoreIsRefusedNamingTheEventStore() {
        assertThatThrownBy(() -> RingCommandBus.builder().eventStore(null))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("eventStore must not be null");
    }

    @ParameterizedTest(name = "ringSize({0})")
    @ValueSource(ints = {6, 0, 1, -4, 3, 4097})
    void ringSizeThatIsNotAPowerOfTwoOfAtLeastTwoIsRefusedNamingTheSettingAndTheValue(int ringSize) {
        assertThatThrownBy(() -> RingCommandBus.builder().ringSize(ringSize))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("ringSize")
                .hasMessageContaining("power of two")
                .hasMessageEndingWith("but was " + ringSize);
    }

    @ParameterizedTest(name = "ringSize({0})")
    @ValueSource(ints = {2, 4, 1024, 1 << 16})
    void ringSizeThatIsAPowerOfTwoOfAtLeastTwoIsAccepted(int ringSize) {
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).ringSize(ringSize).build();

        assertThat(bus.ringSize()).isEqualTo(ringSize);
    }

    @ParameterizedTest(name = "handlerThreads({0})")
    @ValueSource(ints = {0, -1, 257})
    void handlerThreadsOutsideOneTo256AreRefusedNamingTheSettingAndTheValue(int handlerThreads) {
        assertThatThrownBy(() -> RingCommandBus.builder().handlerThreads(handlerThreads))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("handlerThreads")
                .hasMessageEndingWith("but was " + handlerThreads);
    }

    @ParameterizedTest(name = "storeThreads({0})")
    @ValueSource(ints = {0, -1, 65})
    void storeThreadsOutsideOneTo64AreRefusedNamingTheSettingAndTheValue(int storeThreads) {
        assertThatThrownBy(() -> RingCommandBus.builder().storeThreads(storeThreads))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("storeThreads")
                .hasMessageEndingWith("but was " + storeThreads);
    }

    @Test
    void compactTopologyWithSeveralStoreThreadsIsRefusedAtBuildNamingBothSettings() {
        RingCommandBus.Builder builder = RingCommandBus.builder().eventStore(eventStore).handlerThreads(1)
                                                       .topology(io.github.ringbus.Topology.COMPACT).storeThreads(2);

        assertThatThrownBy(builder::build)
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("topology COMPACT runs one store thread, but storeThreads is 2");
    }

    @Test
    void severalStoreThreadsWithoutATopologyChooseFull() {
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).handlerThreads(1).storeThreads(2).build();

        assertThat(bus.storeThreads()).isEqualTo(2);
        assertThat(bus.topology()).isEqualTo(io.github.ringbus.Topology.FULL);
    }

    @Test
    void axonsInMemoryEngineGetsOneStoreThreadByDefaultEvenWithATransactionManager() {
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).topology(io.github.ringbus.Topology.FULL)
                                           .transactionManager(new org.axonframework.common.transaction
                                                   .TransactionManager() {
                                               @Override
                                               public org.axonframework.common.transaction.Transaction
                                               startTransaction() {
                                                   return new org.axonframework.common.transaction.Transaction() {
                                                       @Override
                                                       public void commit() {
                                                       }

                                                       @Override
                                                       public void rollback() {
                                                       }
                                                   };
                                               }
                                           })
                                           .build();

        assertThat(bus.storeThreads()).isEqualTo(1);
    }

    @ParameterizedTest(name = "cacheSize({0})")
    @ValueSource(ints = {0, -1})
    void nonPositiveCacheSizeIsRefusedNamingTheSettingAndTheValue(int cacheSize) {
        assertThatThrownBy(() -> RingCommandBus.builder().cacheSize(cacheSize))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("cacheSize must be positive")
                .hasMessageEndingWith("but was " + cacheSize);
    }

    @ParameterizedTest(name = "readAheadThreads({0})")
    @ValueSource(ints = {-1, 65})
    void readAheadThreadsOutsideZeroToSixtyFourIsRefusedNamingTheSettingAndTheValue(int readAheadThreads) {
        assertThatThrownBy(() -> RingCommandBus.builder().readAheadThreads(readAheadThreads))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("readAheadThreads must be between 0 and 64")
                .hasMessageEndingWith("but was " + readAheadThreads);
    }

    @ParameterizedTest(name = "maxStoreBatchEvents({0})")
    @ValueSource(ints = {0, -1})
    void nonPositiveMaxStoreBatchEventsIsRefusedNamingTheSettingAndTheValue(int maxStoreBatchEvents) {
        assertThatThrownBy(() -> RingCommandBus.builder().maxStoreBatchEvents(maxStoreBatchEvents))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("maxStoreBatchEvents must be positive")
                .hasMessageEndingWith("but was " + maxStoreBatchEvents);
    }

    @Test
    void nullWaitStrategyIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RingCommandBus.builder().waitStrategy(null))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("waitStrategy must not be null");
    }

    @Test
    void nullFullRingPolicyIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RingCommandBus.builder().fullRingPolicy(null))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("fullRingPolicy must not be null");
    }

    @Test
    void nullPublishModeIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RingCommandBus.builder().publishMode(null))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("publishMode must not be null");
    }

    @ParameterizedTest(name = "fullRingTimeout({0} ms)")
    @ValueSource(longs = {0, -1, -1000})
    void nonPositiveFullRingTimeoutIsRefusedNamingTheSettingAndTheValue(long millis) {
        Duration timeout = Duration.ofMillis(millis);

        assertThatThrownBy(() -> RingCommandBus.builder().fullRingTimeout(timeout))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("fullRingTimeout must be positive")
                .hasMessageEndingWith("but was " + timeout);
    }

    @Test
    void nullFullRingTimeoutIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RingCommandBus.builder().fullRingTimeout(null))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("fullRingTimeout must not be null");
    }

    @ParameterizedTest(name = "shutdownTimeout({0} ms)")
    @ValueSource(longs = {0, -1, -1000})
    void nonPositiveShutdownTimeoutIsRefusedNamingTheSettingAndTheValue(long millis) {
        Duration timeout = Duration.ofMillis(millis);

        assertThatThrownBy(() -> RingCommandBus.builder().shutdownTimeout(timeout))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("shutdownTimeout must be positive")
                .hasMessageEndingWith("but was " + timeout);
    }

    @Test
    void nullShutdownTimeoutIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RingCommandBus.builder().shutdownTimeout(null))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("shutdownTimeout must not be null");
    }

    @Test
    void blankThreadNamePrefixIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> RingCommandBus.builder().threadNamePrefix("  "))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("threadNamePrefix must not be blank");
    }

    @Test
    void smallestPositiveTimeoutsAreAccepted() {
        assertThatCode(() -> RingCommandBus.builder().eventStore(eventStore)
                                           .fullRingTimeout(Duration.ofNanos(1))
                                           .shutdownTimeout(Duration.ofNanos(1))
                                           .cacheSize(1)
                                           .handlerThreads(1)
                                           .maxStoreBatchEvents(1)
                                           .build())
                .doesNotThrowAnyException();
    }
}
