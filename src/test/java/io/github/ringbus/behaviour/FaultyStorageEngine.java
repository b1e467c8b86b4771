package io.github.ringbus.behaviour;

import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventhandling.TrackingToken;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.ConcurrencyException;

import java.sql.SQLTransientConnectionException;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.Queue;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Axon's real {@link InMemoryEventStorageEngine}, with appends that fail on demand. Two kinds of fault:
 * <ul>
 *     <li>a switch: while {@link #failAppends(boolean) on}, every append fails at once;</li>
 *     <li>a plan for the next append calls, consumed one per call in the order they were planned:
 *     {@link #failNextAppend()} fails that call, {@link #holdNextAppend()} holds it until the test releases it and
 *     then lets it succeed, {@link #holdAndFailNextAppend()} holds it and then fails it.</li>
 * </ul>
 * A failed append stores nothing and throws an {@link EventStoreException} whose message starts with
 * {@link #INJECTED} and lists the refused payloads. A third kind of fault stands for a conflict in the data of one
 * command, as a database's unique key on (aggregate, sequence number) would report it: every append that contains a
 * {@link #conflictOn conflicting payload} fails with Axon's {@link ConcurrencyException}, and appends without it
 * succeed. A fourth stands for a value the store refuses for a reason it does not explain as a conflict (a column too
 * short, a constraint the bus does not know, a bug of the engine): every append that contains a
 * {@linkplain #refuse refused payload} fails with a plain {@link IllegalArgumentException}. And a fifth stands for a
 * store that cannot be reached: {@link #failNextAppendUnreachable()} fails the next append with an
 * {@link EventStoreException} caused by a {@link SQLTransientConnectionException}. Everything else is the in-memory
 * engine's own behaviour. The engine records the thread of every append call that stored something
 * ({@link #storingThreads()}).
 */
final class FaultyStorageEngine implements EventStorageEngine {

    static final String INJECTED = "injected store failure";

    private final InMemoryEventStorageEngine delegate = new InMemoryEventStorageEngine();
    private final Queue<Planned> plan = new ConcurrentLinkedQueue<>();
    private final Queue<HeldAppend> everHeld = new ConcurrentLinkedQueue<>();
    private final Set<Object> conflicting = ConcurrentHashMap.newKeySet();
    private final Set<Object> refused = ConcurrentHashMap.newKeySet();
    private final Queue<String> storingThreads = new ConcurrentLinkedQueue<>();
    private final Queue<List<Object>> storedAppends = new ConcurrentLinkedQueue<>();
    private volatile boolean failing;
    private final java.util.concurrent.atomic.AtomicInteger readFailures = new java.util.concurrent.atomic.AtomicInteger();

    /** While on, every append fails at once. */
    void failAppends(boolean on) {
        this.failing = on;
    }

    /** The next read of an aggregate's events fails at once. */
    void failNextRead() {
        readFailures.incrementAndGet();
    }

    /** Plans the next unplanned append call to fail at once. */
    void failNextAppend() {
        plan.add(new Planned(null, true, false));
    }

    /**
     * Plans the next unplanned append call to signal {@link HeldAppend#awaitStarted()}, wait for
     * {@link HeldAppend#release()} (at most 10 s) and then store its events.
     */
    HeldAppend holdNextAppend() {
        HeldAppend held = new HeldAppend();
        everHeld.add(held);
        plan.add(new Planned(held, false, false));
        return held;
    }

    /** As {@link #holdNextAppend()}, but once released the append fails and stores nothing. */
    HeldAppend holdAndFailNextAppend() {
        HeldAppend held = new HeldAppend();
        everHeld.add(held);
        plan.add(new Planned(held, true, false));
        return held;
    }

    /** From now on every append that contains an event with this payload fails with a ConcurrencyException. */
    void conflictOn(Object payload) {
        conflicting.add(payload);
    }

    /**
     * From now on every append that contains an event with this payload fails with an
     * {@link IllegalArgumentException}: a failure that says nothing about conflicts or connections.
     */
    void refuse(Object payload) {
        refused.add(payload);
    }

    /** Plans the next unplanned append call to fail as a store that cannot be reached would. */
    void failNextAppendUnreachable() {
        plan.add(new Planned(null, true, true));
    }

    /** The payloads of each append call that stored events, one list per call, in order. */
    List<List<Object>> storedAppends() {
        return List.copyOf(storedAppends);
    }

    /** The names of the threads of the append calls that stored events, in order. */
    List<String> storingThreads() {
        return List.copyOf(storingThreads);
    }

    /** Releases every held append, so that a test that failed half-way leaves no store thread stuck. */
    void releaseAll() {
        everHeld.forEach(HeldAppend::release);
    }

    @Override
    public void appendEvents(List<? extends EventMessage<?>> events) {
        Planned planned = plan.poll();
        if (planned != null && planned.held != null) {
            planned.held.started.countDown();
            planned.held.awaitRelease();
        }
        if (planned != null && planned.unreachable) {
            throw new EventStoreException(INJECTED + ": store unreachable, append of " + describe(events) + " refused",
                                          new SQLTransientConnectionException("injected: connection refused", "08001"));
        }
        if ((planned != null && planned.fail) || failing) {
            throw new EventStoreException(INJECTED + ": append of " + describe(events) + " refused");
        }
        for (EventMessage<?> event : events) {
            if (conflicting.contains(event.getPayload())) {
                throw new ConcurrencyException(INJECTED + ": conflict on " + event.getPayload() + " in append of "
                                                       + describe(events));
            }
        }
        for (EventMessage<?> event : events) {
            if (refused.contains(event.getPayload())) {
                throw new IllegalArgumentException(INJECTED + ": value refused: " + event.getPayload()
                                                           + " in append of " + describe(events));
            }
        }
        delegate.appendEvents(events);
        storingThreads.add(Thread.currentThread().getName());
        storedAppends.add(events.stream().map(EventMessage::getPayload).collect(Collectors.toList()));
    }

    private static String describe(List<? extends EventMessage<?>> events) {
        return events.stream().map(e -> String.valueOf(e.getPayload())).collect(Collectors.joining(", ", "[", "]"));
    }

    @Override
    public void storeSnapshot(DomainEventMessage<?> snapshot) {
        delegate.storeSnapshot(snapshot);
    }

    @Override
    public Stream<? extends TrackedEventMessage<?>> readEvents(TrackingToken trackingToken, boolean mayBlock) {
        return delegate.readEvents(trackingToken, mayBlock);
    }

    @Override
    public DomainEventStream readEvents(String aggregateIdentifier, long firstSequenceNumber) {
        if (readFailures.getAndUpdate(n -> Math.max(0, n - 1)) > 0) {
            throw new EventStoreException(INJECTED + ": reading aggregate " + aggregateIdentifier);
        }
        return delegate.readEvents(aggregateIdentifier, firstSequenceNumber);
    }

    @Override
    public Optional<DomainEventMessage<?>> readSnapshot(String aggregateIdentifier) {
        return delegate.readSnapshot(aggregateIdentifier);
    }

    @Override
    public Optional<Long> lastSequenceNumberFor(String aggregateIdentifier) {
        return delegate.lastSequenceNumberFor(aggregateIdentifier);
    }

    @Override
    public TrackingToken createTailToken() {
        return delegate.createTailToken();
    }

    @Override
    public TrackingToken createHeadToken() {
        return delegate.createHeadToken();
    }

    @Override
    public TrackingToken createTokenAt(Instant dateTime) {
        return delegate.createTokenAt(dateTime);
    }

    private record Planned(HeldAppend held, boolean fail, boolean unreachable) {
    }

    /** An append call that is held inside the storage engine until the test releases it. */
    static final class HeldAppend {

        private final CountDownLatch started = new CountDownLatch(1);
        private final CountDownLatch released = new CountDownLatch(1);

        /** Waits until the store stage is inside the failing append call. */
        void awaitStarted() throws InterruptedException {
            if (!started.await(10, TimeUnit.SECONDS)) {
                throw new AssertionError("the armed append was never called");
            }
        }

        /** Lets the held append go on. */
        void release() {
            released.countDown();
        }

        private void awaitRelease() {
            try {
                if (!released.await(10, TimeUnit.SECONDS)) {
                    throw new AssertionError("the held append was never released");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
