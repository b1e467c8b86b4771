package io.github.ringbus.benchmarks;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.events.RingEventStore;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;

/**
 * Every call into ringbus's API that the benchmarks make, in one place, so that a change to that API is
 * an edit here only.
 *
 * <p>Inside an Axon {@code Configuration} nothing else is needed: the configuration starts and stops the
 * bus (it is a {@code Lifecycle}), and ringbus's {@code ConfigurerModule} routes aggregates through it.
 */
public final class RingBusFactory {

    private RingBusFactory() {
    }

    /** ringbus as it comes: only the event store is given. */
    public static RingCommandBus withDefaults(EventStore eventStore) {
        return RingCommandBus.builder().eventStore(eventStore).build();
    }

    /**
     * ringbus with the best settings found by tuning. Until tuning has been done these are the defaults:
     * record the settings that win here (builder settings such as {@code ringSize}, {@code handlerThreads},
     * {@code waitStrategy}, {@code publishMode}, {@code cacheSize}, {@code maxStoreBatchEvents}).
     */
    public static RingCommandBus tuned(EventStore eventStore) {
        return RingCommandBus.builder().eventStore(eventStore).build();
    }

    /**
     * A started ringbus with default settings outside any Axon {@code Configuration}, over an empty
     * in-memory event store.
     */
    public static StartedBus startStandalone() {
        RingCommandBus bus = withDefaults(
                RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build());
        bus.start();
        return new StartedBus(bus, bus::shutdown);
    }
}
