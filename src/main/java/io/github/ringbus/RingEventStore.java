package io.github.ringbus;

import org.axonframework.common.Registration;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventsourcing.eventstore.AbstractEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.serialization.SerializedMessage;
import org.axonframework.serialization.SerializedObject;
import org.axonframework.serialization.Serializer;
import org.axonframework.monitoring.MessageMonitor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.stream.Stream;

/**
 * Axon's embedded event store with its two roles taken apart, so that a {@link io.github.ringbus.RingCommandBus} can
 * run them as two stages: appending events to the storage engine, and handing them to the subscribers (subscribing
 * event processors). Tracking processors read from the storage engine as usual and are woken after each append.
 * <p>
 * Events published on it from inside a command handled by a {@link io.github.ringbus.RingCommandBus} that stores to
 * this event store ({@code EventBus.publish}, {@code EventGateway.publish} in a {@code @CommandHandler}) join that
 * command's events at once, after the events its aggregate applied before: the bus's store stage stores them with the
 * command, in the handler's order and in the command's transaction, and they are dropped if the command fails.
 * <p>
 * Used by anything else (a saga, an event gateway outside a command, another command bus), it behaves exactly like
 * {@link EmbeddedEventStore}: {@code publish} appends, then calls the subscribers, within the caller's Unit of Work.
 * <p>
 * Thread safety: as {@link EmbeddedEventStore}. Subscribing and unsubscribing may happen at any time; a publication
 * sees the subscribers as they were when it started.
 * <p>
 * Tests: {@code TrackingProcessorOnInMemoryEngineTest}, {@code behaviour.PublishTest}.
 */
public class RingEventStore extends EmbeddedEventStore {

    @SuppressWarnings("unchecked")
    private static final Consumer<List<? extends EventMessage<?>>>[] NO_SUBSCRIBERS = new Consumer[0];

    private volatile Consumer<List<? extends EventMessage<?>>>[] subscribers = NO_SUBSCRIBERS;
    private volatile int dispatchInterceptorCount;
    /** The storage engine's event serializer, or null when it does not serialize (e.g. in memory). */
    private final Serializer eventSerializer;
    /** True when a multi-event append could be seen out of index order by readers: append event by event. */
    private final boolean appendOneByOne;

    /**
     * @param builder the settings; see {@link #builder()}
     */
    protected RingEventStore(Builder builder) {
        super(builder);
        this.eventSerializer = storageEngine() instanceof AbstractEventStorageEngine serializingEngine
                ? serializingEngine.getEventSerializer()
                : null;
        this.appendOneByOne = appendsOutOfIndexOrder(storageEngine());
    }

    /**
     * Whether the storage engine may make a multi-event append visible out of index order. Axon's
     * {@link InMemoryEventStorageEngine} (4.13) puts the events of one append into its skip list from a
     * {@code HashMap}, so a batch's higher indexes can land before its lower ones; a tracking stream reading at that
     * moment moves past the lower ones and never returns to them. One event per append is always seen in order:
     * appends are serialized and each takes the next index.
     *
     * @param engine a storage engine
     * @return true for Axon's in-memory engine (and its subclasses)
     */
    static boolean appendsOutOfIndexOrder(EventStorageEngine engine) {
        return engine instanceof InMemoryEventStorageEngine;
    }

    /**
     * @return true when the storage engine takes one append at a time (Axon's in-memory engine, under its lock):
     * several store threads would only wait for each other there
     */
    boolean appendsUnderOneLock() {
        return storageEngine() instanceof InMemoryEventStorageEngine;
    }

    /**
     * A builder with the same settings and defaults as {@link EmbeddedEventStore#builder()}; the storage engine is
     * required.
     *
     * @return a new builder
     */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public synchronized Registration subscribe(Consumer<List<? extends EventMessage<?>>> eventProcessor) {
        Objects.requireNonNull(eventProcessor, "eventProcessor");
        List<Consumer<List<? extends EventMessage<?>>>> updated = new ArrayList<>(List.of(subscribers));
        if (!updated.contains(eventProcessor)) {
            updated.add(eventProcessor);
            subscribers = toArray(updated);
        }
        return () -> unsubscribe(eventProcessor);
    }

    private synchronized boolean unsubscribe(Consumer<List<? extends EventMessage<?>>> eventProcessor) {
        List<Consumer<List<? extends EventMessage<?>>>> updated = new ArrayList<>(List.of(subscribers));
        boolean removed = updated.remove(eventProcessor);
        subscribers = toArray(updated);
        return removed;
    }

    @SuppressWarnings("unchecked")
    private static Consumer<List<? extends EventMessage<?>>>[] toArray(
            List<Consumer<List<? extends EventMessage<?>>>> list) {
        return list.toArray(new Consumer[0]);
    }

    @Override
    public Registration registerDispatchInterceptor(
            MessageDispatchInterceptor<? super EventMessage<?>> dispatchInterceptor) {
        Registration registration = super.registerDispatchInterceptor(dispatchInterceptor);
        synchronized (this) {
            dispatchInterceptorCount++;
        }
        return () -> {
            boolean cancelled = registration.cancel();
            if (cancelled) {
                synchronized (this) {
                    dispatchInterceptorCount--;
                }
            }
            return cancelled;
        };
    }

    /**
     * Publishes the events. Inside a command of a ring bus that stores to this store (the current Unit of Work is the
     * command's slot Unit of Work, before its commit) the events are added to the command's events, in order, for
     * the store stage; the event store's message monitor and span factory do not see them, as they do not see the
     * events the aggregate applies. Anywhere else, as {@link EmbeddedEventStore#publish(List)}.
     */
    @Override
    public void publish(List<? extends EventMessage<?>> events) {
        if (CurrentUnitOfWork.isStarted()) {
            UnitOfWork<?> unitOfWork = CurrentUnitOfWork.get();
            // A command run in place from a ring handler (see NestedDispatch) has a Unit of Work nested in the slot's.
            if (unitOfWork.root() instanceof PublishedEventCollector command
                    && command.collectPublished(this, events)) {
                if (unitOfWork != command) {
                    // As Axon drops a nested Unit of Work's queued events when it rolls back.
                    List<? extends EventMessage<?>> collected = List.copyOf(events);
                    unitOfWork.onRollback(u -> command.discardPublished(collected));
                }
                return;
            }
        }
        super.publish(events);
    }

    /**
     * The events staged for an aggregate and not yet stored, which Axon appends to what the store holds when a
     * repository reads it inside a Unit of Work: besides Axon's own (queued in the Unit of Work), inside a ring
     * command the events its handler and the commands it ran in place applied or published so far (they wait in the
     * command's slot for the store stage, not in Axon's queue). So an aggregate with Axon's own repository that is
     * loaded again in the same command (after a nested Unit of Work rolled back, say) sees them, as it would on
     * {@code SimpleCommandBus}. The ring's own repository reads without them ({@link #readStoredEvents}).
     */
    @Override
    protected Stream<? extends DomainEventMessage<?>> stagedDomainEventMessages(String aggregateIdentifier) {
        Stream<? extends DomainEventMessage<?>> queued = super.stagedDomainEventMessages(aggregateIdentifier);
        if (!CurrentUnitOfWork.isStarted()
                || !(CurrentUnitOfWork.get().root() instanceof PublishedEventCollector command)) {
            return queued;
        }
        List<? extends EventMessage<?>> collected = command.collected(this);
        List<DomainEventMessage<?>> staged = new ArrayList<>();
        for (int i = 0; i < collected.size(); i++) {
            if (collected.get(i) instanceof DomainEventMessage<?> event
                    && aggregateIdentifier.equals(event.getAggregateIdentifier())) {
                staged.add(event);
            }
        }
        return staged.isEmpty() ? queued : Stream.concat(queued, staged.stream());
    }

    /**
     * An aggregate's events as the store holds them (from its last snapshot), followed by those Axon staged in the
     * current Unit of Work, but not those of the ring command being handled on this thread: what the ring's
     * repository reads, which replays a command's events itself where they count ({@link AggregateHolder}).
     *
     * @param aggregateIdentifier the aggregate's identifier
     * @return its events
     */
    DomainEventStream readStoredEvents(String aggregateIdentifier) {
        Optional<DomainEventMessage<?>> snapshot;
        try {
            snapshot = storageEngine().readSnapshot(aggregateIdentifier);
        } catch (Exception | LinkageError e) {
            snapshot = handleSnapshotReadingError(aggregateIdentifier, e);
        }
        DomainEventStream stored = snapshot.isPresent()
                ? DomainEventStream.concat(DomainEventStream.of(snapshot.get()),
                                           storageEngine().readEvents(aggregateIdentifier,
                                                                      snapshot.get().getSequenceNumber() + 1))
                : storageEngine().readEvents(aggregateIdentifier);
        return DomainEventStream.concat(stored,
                                        DomainEventStream.of(super.stagedDomainEventMessages(aggregateIdentifier)));
    }

    /**
     * The path of events published outside the ring: append (the storage engine defers to the Unit of Work if one
     * is active), then notify the subscribers.
     */
    @Override
    protected void prepareCommit(List<? extends EventMessage<?>> events) {
        // Published by a subscriber that the store stage calls before its batch's append (nothing can be rolled back
        // there): appended after the batch's, so after the events that caused them (DeferredAppends).
        if (!(CurrentUnitOfWork.isStarted() && CurrentUnitOfWork.get().root() instanceof DeferredAppends deferred
                && deferred.deferAppend(this, events))) {
            super.prepareCommit(events); // appends; Axon's own subscriber list stays empty, ours is called below
        }
        publishToSubscribers(events);
    }

    /**
     * @return true when event dispatch interceptors are registered, so staged events must pass through
     * {@link #interceptStaged}
     */
    boolean hasDispatchInterceptors() {
        return dispatchInterceptorCount > 0;
    }

    /**
     * Applies the event dispatch interceptors to events a command produced in the ring, as {@code publish} would.
     *
     * @param events the events a command applied
     * @return the events as the interceptors left them
     */
    List<? extends EventMessage<?>> interceptStaged(List<? extends EventMessage<?>> events) {
        return intercept(events);
    }

    /**
     * Serializes the payload and metadata of each event with the storage engine's event serializer, ahead of the
     * append. Axon keeps a message's serialized forms with the message (per serializer), and Axon's JDBC and JPA
     * engines serialize through it, so the append later reuses this work instead of doing it on the store stage's
     * thread, which is the one thread every command's append passes through. A ring bus calls this on its handler
     * threads. Does nothing when the storage engine does not serialize (e.g. Axon's in-memory engine).
     *
     * @param events the events of one command, as they will be appended
     * @throws org.axonframework.serialization.SerializationException if an event cannot be serialized
     */
    void serializeAhead(List<? extends EventMessage<?>> events) {
        if (eventSerializer == null) {
            return;
        }
        for (EventMessage<?> event : events) {
            // byte[] is what Axon's JDBC (by default) and JPA engines store; another representation is converted
            // from the cached one.
            event.serializePayload(eventSerializer, byte[].class);
            event.serializeMetaData(eventSerializer, byte[].class);
        }
    }

    /**
     * The event as the store will give it back: its serialized payload and metadata (those {@link #serializeAhead}
     * made, which the append writes), deserialized lazily by the engine's event serializer, as Axon's engines do
     * when they read. The handle stage reads it back to find an event the serializer writes but cannot read
     * ({@code AggregateHolder.cannotBeReadBack}).
     *
     * @return the stored form, or null when the storage engine does not serialize
     */
    DomainEventMessage<?> asStored(DomainEventMessage<?> event) {
        if (eventSerializer == null) {
            return null;
        }
        SerializedObject<byte[]> payload = event.serializePayload(eventSerializer, byte[].class);
        SerializedObject<byte[]> metaData = event.serializeMetaData(eventSerializer, byte[].class);
        return new GenericDomainEventMessage<>(
                event.getType(), event.getAggregateIdentifier(), event.getSequenceNumber(),
                new SerializedMessage<>(event.getIdentifier(), payload, metaData, eventSerializer),
                event.getTimestamp());
    }

    /**
     * @return the name of the storage engine's event serializer's class, for messages; null when it serializes nothing
     */
    String eventSerializerName() {
        return eventSerializer == null ? null : eventSerializer.getClass().getName();
    }

    /**
     * The store stage's append: writes the events to the storage engine, nothing else. Called outside any Unit of
     * Work, within the store stage's transaction. Readers (tracking processors) see the events in index order: on
     * an engine that would not show a multi-event append in order ({@link #appendsOutOfIndexOrder}, Axon's in-memory
     * engine), the events are appended one per call, in list order.
     *
     * @param events the events of a batch of commands
     */
    void appendStaged(List<? extends EventMessage<?>> events) {
        if (appendOneByOne && events.size() > 1) {
            // Only for the in-memory engine, which allocates far more per append than this singleton list.
            for (int i = 0; i < events.size(); i++) {
                storageEngine().appendEvents(Collections.singletonList(events.get(i)));
            }
        } else {
            storageEngine().appendEvents(events);
        }
    }

    /**
     * Tells the store's tracking streams that events were appended, so that tracking processors fetch them now
     * rather than at their next poll.
     *
     * @param events the events just appended
     */
    void announceAppended(List<? extends EventMessage<?>> events) {
        afterCommit(events);
    }

    /**
     * @return true when at least one subscriber is registered
     */
    boolean hasSubscribers() {
        return subscribers.length > 0;
    }

    /**
     * The publish stage's work: hands the events to every subscriber, in subscription order, on the calling thread.
     * A subscriber's exception propagates to the caller and the remaining subscribers are not called.
     *
     * @param events the events of one command
     */
    void publishToSubscribers(List<? extends EventMessage<?>> events) {
        Consumer<List<? extends EventMessage<?>>>[] current = subscribers;
        for (Consumer<List<? extends EventMessage<?>>> subscriber : current) {
            subscriber.accept(events);
        }
    }

    /** Builds a {@link RingEventStore}; each setter is {@link EmbeddedEventStore.Builder}'s. */
    public static class Builder extends EmbeddedEventStore.Builder {

        @Override
        public Builder storageEngine(EventStorageEngine storageEngine) {
            super.storageEngine(storageEngine);
            return this;
        }

        @Override
        public Builder messageMonitor(MessageMonitor<? super EventMessage<?>> messageMonitor) {
            super.messageMonitor(messageMonitor);
            return this;
        }

        @Override
        public Builder cachedEvents(int cachedEvents) {
            super.cachedEvents(cachedEvents);
            return this;
        }

        @Override
        public Builder fetchDelay(long fetchDelay) {
            super.fetchDelay(fetchDelay);
            return this;
        }

        @Override
        public Builder cleanupDelay(long cleanupDelay) {
            super.cleanupDelay(cleanupDelay);
            return this;
        }

        @Override
        public Builder timeUnit(TimeUnit timeUnit) {
            super.timeUnit(timeUnit);
            return this;
        }

        @Override
        public RingEventStore build() {
            return new RingEventStore(this);
        }
    }
}
