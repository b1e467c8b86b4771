package io.github.ringbus;

import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.AbstractEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;

/**
 * The store stage's append to an event store that is not a {@link RingEventStore} when that store's engine would show
 * a multi-event append out of index order ({@link RingEventStore#appendsOutOfIndexOrder}, Axon's in-memory engine):
 * {@code publish} is called once per event, in list order, so that tracking readers never skip an event. Subscribers
 * are then called once per event too.
 * <p>
 * Tests: {@code CreationOnInMemoryEngineTest}, {@code TrackingProcessorOnInMemoryEngineTest}.
 */
final class OneByOnePublish {

    private static final Logger logger = LoggerFactory.getLogger(OneByOnePublish.class);

    private OneByOnePublish() {
    }

    /**
     * @param eventStore an event store that is not a {@link RingEventStore}
     * @return true when the store stage must publish its batches to it one event at a time
     */
    static boolean needed(EventStore eventStore) {
        EventStorageEngine engine = AxonInternals.storageEngineOf(eventStore);
        if (engine == null && eventStore instanceof AbstractEventStore) {
            logger.warn("Cannot tell the storage engine of event store [{}]; its batches are appended in one call. "
                                + "With Axon's in-memory engine use a RingEventStore, or tracking processors may "
                                + "skip events", eventStore.getClass().getName());
        }
        return engine != null && RingEventStore.appendsOutOfIndexOrder(engine);
    }

    /** Publishes each event on its own, in order. */
    static void publish(EventStore eventStore, List<? extends EventMessage<?>> events) {
        for (int i = 0; i < events.size(); i++) {
            eventStore.publish(events.get(i));
        }
    }
}
