package io.github.ringbus;

import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;

import java.util.List;

/**
 * What {@link RingEventStore} needs of a ring command's Unit of Work: to hand it the events a handler publishes on the
 * event store while the command runs, and to take them back when a nested Unit of Work rolls back. The one way the
 * public event store reaches into the ring (implemented by {@link SlotUnitOfWork}); handler thread only.
 */
interface PublishedEventCollector {

    /**
     * @param store  the event store the events were published on
     * @param events the published events
     * @return true when the command took the events (they are stored with its own, in order); false when they are
     * not the command's to store (another store, or the command is past its prepare-commit phase)
     */
    boolean collectPublished(EventStore store, List<? extends EventMessage<?>> events);

    /**
     * @param events events {@link #collectPublished collected} earlier, to drop again
     */
    void discardPublished(List<? extends EventMessage<?>> events);

    /**
     * @param store an event store
     * @return the events the command applied or had published so far, to be stored to {@code store}; empty when
     * they are not the command's to store there, or the command is past its prepare-commit phase. A live view: read
     * it on the handler thread, at once.
     */
    List<? extends EventMessage<?>> collected(EventStore store);
}
