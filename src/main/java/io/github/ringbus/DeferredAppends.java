package io.github.ringbus;

import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;

import java.util.List;

/**
 * What {@code RingEventStore} needs of the Unit of Work in which the store stage calls a command's subscribers: to
 * keep the events they publish out of the store until the batch's own events are appended, where the store stage
 * calls the subscribers before that append (nothing can be rolled back there). Implemented by the store stage's Unit of
 * Work; store thread only.
 */
interface DeferredAppends {

    /**
     * @param store  the event store the events are to be appended to
     * @param events the events, as its dispatch interceptors left them
     * @return true when they are kept, to be appended after the batch's own events; false when they are to be
     * appended now
     */
    boolean deferAppend(EventStore store, List<? extends EventMessage<?>> events);
}
