package io.github.ringbus;

import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.AbstractEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/**
 * The store stage's read-back of what it stored: the first stored event of each payload type is read back from the
 * store once and deserialized, as the next load of its aggregate will ({@link #newTypesOf}). One per store thread,
 * used by it alone. Tests: {@code postgres.PostgresSerializationTest}.
 */
final class StoreReadBack {

    private static final Logger logger = LoggerFactory.getLogger(StoreReadBack.class);

    private final EventStore eventStore;
    /** The ring's event store, which keeps the bytes the handler thread wrote for an event; null on a plain one. */
    private final RingEventStore splitStore;
    private final LeftInterrupts leftInterrupts;
    /**
     * The payload types whose stored form this store thread has read back from the store once. Store thread only; a
     * lookup by class allocates nothing.
     */
    private final Set<Class<?>> readBackTypes = new HashSet<>();
    /** False on Axon's in-memory engine, which stores the events themselves: nothing was serialized. */
    private final boolean readsBack;
    /** The event serializer's class, to name it when an event cannot be read back. */
    private final String eventSerializer;

    StoreReadBack(EventStore eventStore, RingEventStore splitStore, LeftInterrupts leftInterrupts) {
        this.eventStore = eventStore;
        this.splitStore = splitStore;
        this.leftInterrupts = leftInterrupts;
        EventStorageEngine engine = AxonInternals.storageEngineOf(eventStore);
        this.readsBack = !(engine instanceof InMemoryEventStorageEngine);
        this.eventSerializer = engine instanceof AbstractEventStorageEngine axonEngine
                ? axonEngine.getEventSerializer().getClass().getName() : "the event store's";
    }

    /**
     * The first time this thread stored an event of a payload type, reads that event back from the store and
     * deserializes it, payload and metadata, as the next load of its aggregate will. {@code SimpleCommandBus} reads an
     * aggregate's events at every command, so a serializer that writes what it cannot read (XStream and a record, say)
     * fails the aggregate's second command; the ring's cache would hide it until the aggregate is next read, after a
     * restart perhaps. When the event cannot be read back, the command that stored it keeps its success (as on
     * {@code SimpleCommandBus}), an error names the type, the serializer's failure and the aggregate, and every
     * aggregate of the command is given up: its next command reads it from the store and fails as on
     * {@code SimpleCommandBus}. Once per payload type and store thread; after that a set lookup per event. Not on Axon's
     * in-memory engine, which serializes nothing.
     */
    void newTypesOf(CommandSlot slot) {
        if (!readsBack) {
            return;
        }
        List<EventMessage<?>> events = slot.events;
        for (int i = 0; i < events.size(); i++) {
            if (!(events.get(i) instanceof DomainEventMessage<?> event) || readBackTypes.contains(event.getPayloadType())) {
                continue;
            }
            Throwable unreadable = readBack(event);
            if (unreadable == null) {
                readBackTypes.add(event.getPayloadType());
            } else if (unreadableAsWritten(event)) {
                // The handler thread found it in the bytes it wrote, said so, and marked the aggregate: its later
                // commands fail as on SimpleCommandBus; giving the generation up would fail them otherwise.
                continue;
            } else {
                logger.error("Events of type [{}] are stored but serializer [{}] cannot read them back: {}. Command [{}] "
                                     + "stored one on aggregate [{}] (sequence {}); the aggregate is read from the "
                                     + "store at its next command, which fails as on SimpleCommandBus until the "
                                     + "serializer configured for events can read the type",
                             event.getPayloadType().getName(), eventSerializer, unreadable, slot.commandName(),
                             event.getAggregateIdentifier(), event.getSequenceNumber(), unreadable);
                RefusedBatch.poison(slot);
                return;
            }
        }
    }

    /**
     * @return true when the event cannot be read back from the bytes written for it either (what the handler thread
     *         checked: {@code HandleStage.readBack}), as opposed to what the store returned
     */
    private boolean unreadableAsWritten(DomainEventMessage<?> event) {
        DomainEventMessage<?> asStored = splitStore == null ? null : splitStore.asStored(event);
        if (asStored == null) {
            return false;
        }
        try {
            asStored.getPayload();
            asStored.getMetaData();
            return false;
        } catch (RuntimeException | LinkageError unreadable) {
            return true;
        }
    }

    /** @return why the stored form of the event cannot be read, or null when it can (or is not found) */
    private Throwable readBack(DomainEventMessage<?> event) {
        try {
            // No Unit of Work on this thread: the store's events only, nothing staged.
            DomainEventStream stored = eventStore.readEvents(event.getAggregateIdentifier(), event.getSequenceNumber());
            while (stored.hasNext()) {
                DomainEventMessage<?> read = stored.next();
                if (read.getSequenceNumber() == event.getSequenceNumber()) {
                    read.getPayload();
                    read.getMetaData();
                    return null;
                }
            }
            return null;
        } catch (RuntimeException | LinkageError unreadable) {
            return unreadable;
        } finally {
            leftInterrupts.clear("store (read back)", null);
        }
    }
}
