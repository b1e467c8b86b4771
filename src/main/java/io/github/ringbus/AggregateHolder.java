package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.Registration;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventBus;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.EventSourcedAggregate;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MessageHandler;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * One aggregate instance in memory, and what ringbus must know to keep it exactly equal to "every successful earlier
 * command, in order".
 * <p>
 * <b>Ownership.</b> The preload stage creates a holder (loading the aggregate from the store) and caches it; from then
 * on only the handle-stage thread that owns the aggregate's identifier touches the aggregate, because every command
 * for one identifier goes to the same handler thread, in ring order. The preload stage never re-reads an aggregate it
 * has cached, and evicts a holder only when no slot in flight refers to it, so it never loads stale state while
 * events are still on their way to the store.
 * <p>
 * <b>Failure in the handler.</b> Axon applies an event to the aggregate as soon as the handler calls {@code apply}.
 * If the handler then throws, the holder rebuilds the aggregate from the store plus its own copy of the events that
 * are handled but not yet stored ({@link #unstored}); later commands for the aggregate wait for nothing and see the
 * state of all successful earlier commands. A failure before any {@code apply} costs nothing. If the store cannot be
 * read then, the aggregate is read again the same way before its next command (which fails if the store still cannot
 * be read); the earlier commands are stored as handled, never given up for it.
 * <p>
 * <b>Failure in the store.</b> When an append fails, commands handled after it may already have built on its events.
 * The store stage marks the holder's current <em>generation</em> as poisoned and never stores a later command of that
 * generation as it is: it has the handler thread handle those commands again on the aggregate read from the store, in
 * a new generation ({@link #restartFromStore}, {@link ReRuns}), or fails those that may not run twice; a handler
 * thread that sees the mark first rebuilds the aggregate from the store and starts a new generation itself. Other
 * aggregates are never touched.
 * <p>
 * <b>Eviction.</b> When the bus is asked to drop its cached aggregates ({@link RingCommandBus#evictCachedAggregates},
 * when a node's share of the aggregates changed), the handle stage reads the aggregate from the store again before its
 * next command, followed by its own events still on their way there ({@link #unstored}): once per request, and only
 * for the aggregates that get a command. Nothing is lost of the commands in flight, and nothing another node stored is
 * missed; an event of this node that another node's event now occupies the place of fails at the append, as above.
 *
 * @param <T> the aggregate root type
 */
final class AggregateHolder<T> implements AggregateCache.Entry {


    /**
     * What a holder needs of its aggregate type's repository ({@link RingRepository}): the holder's narrow view of it,
     * so that the holder depends on no more than it uses.
     */
    interface Source<T> {

        /**
         * Reads the aggregate from the store, followed by the events handled but perhaps not yet stored; any thread.
         *
         * @param sink where the aggregate puts the events it applies (its holder's, handed in: the source never
         *             calls back into the holder)
         * @return the aggregate, or null when the store has no event of it
         */
        EventSourcedAggregate<T> readFromStore(String identifier, EventBus sink,
                                               List<DomainEventMessage<?>> unstored) throws Exception;

        /** @return how many times the bus was asked to read its aggregates from the store again; any thread */
        long evictionEpoch();

        /** @return how many times the bus was asked to read one named aggregate again ({@link CacheEvictions}) */
        long namedEvictionEpoch();

        /** @return whether a request named this aggregate after {@code seen}; answers it ({@link CacheEvictions}) */
        boolean evictionNamedSince(String identifier, long seen);

        /**
         * @param type an aggregate type name as Axon puts it in a domain event ({@code DomainEventMessage.getType()})
         * @return true when it names this aggregate type or, for a polymorphic aggregate, one of its subtypes (Axon
         * writes the declared type of the instance's own class, "Car" under the root "Vehicle")
         */
        boolean hasTypeName(String type);

        /**
         * The checks Axon's repositories make when a command loads an aggregate, on the holder's aggregate;
         * handle-stage thread.
         */
        EventSourcedAggregate<T> checkedForCommand(String aggregateIdentifier, AggregateHolder<T> holder,
                                                   Long expectedVersion);

        /**
         * @return the aggregate's events in the store from {@code firstSequenceNumber} on, snapshots not used; any
         * thread
         */
        List<DomainEventMessage<?>> storedEventsFrom(String identifier, long firstSequenceNumber) throws Exception;

        /** Runs a command on an aggregate that exists; handle-stage thread. */
        Object handleInstanceCommand(EventSourcedAggregate<T> aggregate, CommandMessage<?> command) throws Exception;
    }

    private final Source<T> repository;
    private final AppliedEventSink sink = new AppliedEventSink();
    private final MessageHandler<CommandMessage<?>> commandHandler = this::handleInstanceCommand;

    // --- handle-stage thread ---------------------------------------------------------------------------------------
    private String identifier;
    private EventSourcedAggregate<T> aggregate;
    private EventSourcedAggregate<T> aggregateBeforeCommand;
    private Borrower slot;
    private int generation;
    /** The eviction request up to which this aggregate is as the store had it; see {@link #beginCommand}. */
    private long evictionEpoch;
    /** The named eviction requests this holder has looked itself up in; see {@link #beginCommand}. */
    private long namedEvictionEpoch;
    /** Events handled successfully but not yet known to be stored, oldest first. */
    // 2, not the default 16: every cached aggregate has one (docs/benchmarks.md, the cache's memory)
    private final ArrayDeque<DomainEventMessage<?>> unstored = new ArrayDeque<>(2);
    /**
     * Set when a failed command's changes could not be undone (the store could not be read): {@link #aggregate} still
     * holds them, and the next command reads the aggregate again from the store and {@link #unstored}.
     */
    private boolean unrestored;
    /**
     * Set when a command failed on this aggregate while it did not exist (a refused creation, a create-if-missing
     * that failed): the holder stays cached with no aggregate, and the next command looks in the store again, as
     * {@code SimpleCommandBus} reads the store at every command: another writer (a replica, a handover) may have
     * created it since. Costs one read, after such a failure only.
     */
    private boolean lookAgain;
    /**
     * One of this aggregate's events, handled and on its way to the store (or stored), in the form the store will give
     * it back, which the event serializer cannot read ({@link #cannotBeReadBack}); or null. While set, every command
     * reads the aggregate as a load on {@code SimpleCommandBus} would, that event included, and fails as it does.
     */
    private DomainEventMessage<?> unreadable;

    // --- preload-stage thread --------------------------------------------------------------------------------------
    private long lastSlotSequence = -1;

    // --- written by the store stage, read by the handle stage: a type of its own ------------------------------------
    private final StoreMarks marks = new StoreMarks();

    AggregateHolder(Source<T> repository, String identifier) {
        this.repository = repository;
        this.identifier = identifier;
        this.evictionEpoch = repository == null ? 0 : repository.evictionEpoch();
        this.namedEvictionEpoch = repository == null ? 0 : repository.namedEvictionEpoch();
    }

    /**
     * @return the aggregate's identifier, or null while a creation command without a target identifier runs
     */
    String identifier() {
        return identifier;
    }

    /**
     * @return the repository of the aggregate's type
     */
    Source<T> repository() {
        return repository;
    }

    // --- preload stage ---------------------------------------------------------------------------------------------

    void loaded(EventSourcedAggregate<T> aggregate) {
        this.aggregate = aggregate;
    }

    void referencedBy(long slotSequence) {
        this.lastSlotSequence = slotSequence;
    }

    @Override
    public long lastSlotSequence() {
        return lastSlotSequence;
    }

    // --- handle stage ----------------------------------------------------------------------------------------------

    /**
     * Prepares the aggregate for the command in {@code slot}, on the handle stage's thread: rebuilds it if the store
     * failed an earlier command's events, drops the events known to be stored from {@link #unstored}, and directs
     * the events the handler applies to the slot.
     *
     * @param slot the slot whose command is about to run
     * @return the generation the command's events belong to
     * @throws Exception when the store cannot be read to rebuild the aggregate
     */
    int beginCommand(Borrower slot) throws Exception {
        int poisoned = poisonedGeneration();
        if (poisoned >= generation) {
            // Nothing of generation <= poisoned will be appended any more: the store holds the true state. Read it
            // before changing anything: if the read fails, the next command tries again.
            EventSourcedAggregate<T> rebuilt = repository.readFromStore(identifier, sink, List.of());
            generation = poisoned + 1;
            unstored.clear();
            unrestored = false;
            unreadable = null; // read from the store alone, which fails by itself if that event is stored
            aggregate = rebuilt;
        }
        dropStoredEvents();
        long requested = repository.evictionEpoch();
        long named = repository.namedEvictionEpoch();
        boolean namedHere = false;
        if (named != namedEvictionEpoch) {
            namedHere = identifier != null && repository.evictionNamedSince(identifier, namedEvictionEpoch);
            namedEvictionEpoch = named;
        }
        if ((unrestored || lookAgain || namedHere || requested != evictionEpoch) && identifier != null) {
            // Another node may have changed it, or a failed command's changes could not be undone: the store's state,
            // then this node's events not yet stored (those the store already returned, by sequence number, are
            // skipped), then those of the command this aggregate is still lent to, if any. If the read fails, this
            // command fails and the next one tries again.
            aggregate = repository.readFromStore(identifier, sink, notYetStored(this.slot == slot ? slot : null));
            evictionEpoch = requested;
            unrestored = false;
            lookAgain = false;
        }
        this.slot = slot;
        this.aggregateBeforeCommand = aggregate;
        return generation;
    }

    /**
     * Before its commands built on given-up state are handled again ({@link ReRuns}), on the handle stage's thread:
     * reads the aggregate from the store, which then holds every earlier command of it that will ever be stored, and
     * starts a new generation, giving up every earlier one (a command of those not handled again fails at the
     * store).
     *
     * @throws Exception when the store cannot be read; nothing is changed then
     */
    void restartFromStore() throws Exception {
        EventSourcedAggregate<T> rebuilt = repository.readFromStore(identifier, sink, List.of());
        startNewGeneration(false);
        aggregate = rebuilt;
        evictionEpoch = repository.evictionEpoch();
    }

    /**
     * As {@link #restartFromStore} when the store cannot be read (it holds an event the serializer cannot read back,
     * say): every earlier generation is given up all the same, and a new one starts on an aggregate the next command
     * reads from the store again (failing as that read fails). Handle-stage thread.
     *
     * @return the new generation, that of the commands handled again that fail as the read did
     */
    int restartUnread() {
        startNewGeneration(true);
        return generation;
    }

    /** Gives up every generation so far and starts the next, with nothing on its way to the store. */
    private void startNewGeneration(boolean readAgain) {
        int next = Math.max(generation, poisonedGeneration()) + 1;
        poison(next - 1);
        generation = next;
        unstored.clear();
        unrestored = readAgain;
        unreadable = null;
    }

    /**
     * Drops from {@link #unstored} the events the store stage says are stored, on the handle stage's thread: before
     * each command, and between batches for the aggregates whose events were on their way ({@code HandleStage}), so
     * that an aggregate waiting in the cache for its next command does not keep its last command's events in memory.
     *
     * Events of a given-up generation will never be stored (the store fails them), so they are dropped too: the next
     * command reads the aggregate from the store without them ({@link #beginCommand}).
     *
     * @return true when some of its events are still on their way to the store
     */
    boolean dropStoredEvents() {
        if (poisonedGeneration() >= generation) {
            unstored.clear();
            return false;
        }
        long stored = storedSequenceNumber();
        while (!unstored.isEmpty() && unstored.peekFirst().getSequenceNumber() <= stored) {
            unstored.pollFirst();
        }
        return !unstored.isEmpty();
    }

    /**
     * Records this aggregate's events of the command that just succeeded as handled but not yet stored.
     *
     * @param events the command's events: this aggregate's, and any others the handler published (ignored here)
     */
    void commandSucceeded(List<? extends EventMessage<?>> events) {
        for (int i = 0; i < events.size(); i++) {
            EventMessage<?> event = events.get(i);
            if (owns(event)) {
                unstored.addLast((DomainEventMessage<?>) event);
            }
        }
        slot = null;
        aggregateBeforeCommand = null;
    }

    /**
     * Restores the state before the command that just failed. When the command applied no events to this aggregate
     * it is unchanged; when it did not exist before the command, it is absent again; otherwise it is rebuilt from the
     * store and {@link #unstored}.
     * <p>
     * When the store cannot be read, the aggregate is left marked as not restored, and its next command reads it
     * again (from the store and {@link #unstored}, which still holds the earlier commands' events on their way to the
     * store) before it runs. Nothing is given up: the earlier commands are stored as handled, and no later command
     * is built on a store that does not hold them yet.
     *
     * @param events the failed command's events (this aggregate's and any others); they are discarded
     * @throws Exception when the store cannot be read
     */
    void commandRolledBack(List<? extends EventMessage<?>> events) throws Exception {
        try {
            if (!ownsAny(events) || aggregateBeforeCommand == null) {
                // Unchanged, or created by this very command: nothing else can have applied events to it.
                aggregate = aggregateBeforeCommand;
                lookAgain = aggregate == null;
            } else {
                unrestored = true;
                aggregate = repository.readFromStore(identifier, sink, notYetStored(null));
                unrestored = false;
            }
        } finally {
            slot = null;
            aggregateBeforeCommand = null;
        }
    }

    /**
     * Restores the state before a command that ran in place on this aggregate from another command's handler
     * ({@link NestedDispatch}) and failed, its events discarded: the store's state, the events handled but not yet
     * stored, then this aggregate's events among {@code kept} (those of earlier commands run in place from the same
     * handler, which stay with it). Stays bound to the other command's slot when such an earlier command changed it
     * ({@code stillBorrowed}); otherwise it is unbound, as after any failed command. When the store cannot be read,
     * the aggregate's next command reads it again first, as after {@link #commandRolledBack}.
     *
     * @param discarded the failed command's events (this aggregate's and any others)
     * @param kept      the events the other command's slot keeps
     * @throws Exception when the store cannot be read
     */
    void inPlaceCommandRolledBack(List<? extends EventMessage<?>> discarded, List<? extends EventMessage<?>> kept,
                                  boolean stillBorrowed) throws Exception {
        try {
            if (ownsAny(discarded)) {
                unrestored = true;
                List<DomainEventMessage<?>> replay = notYetStored(null);
                addOwned(kept, replay);
                aggregate = repository.readFromStore(identifier, sink, replay);
                aggregateBeforeCommand = aggregate;
                unrestored = false;
            }
        } finally {
            if (!stillBorrowed) {
                slot = null;
                aggregateBeforeCommand = null;
            }
        }
    }

    /**
     * Whether the event is one of this aggregate's: a domain event with this aggregate's identifier and the type name of
     * its type or, when polymorphic, of one of its subtypes (the one it is an instance of). A
     * command's events may also hold events the handler published on the event bus, and (later) events of other
     * aggregates it created; each holder's bookkeeping considers only its own.
     *
     * @param event one of a command's events
     * @return true when it belongs to this aggregate
     */
    boolean owns(EventMessage<?> event) {
        return event instanceof DomainEventMessage<?> domainEvent
                && domainEvent.getAggregateIdentifier() != null
                && domainEvent.getAggregateIdentifier().equals(identifier)
                && repository.hasTypeName(domainEvent.getType());
    }

    /**
     * @param lentTo the command this aggregate is still lent to (its events stay with it), or null
     * @return a new list of the events to replay after the store's: {@link #unstored}, then this aggregate's among
     * {@code lentTo}'s events
     */
    /**
     * A command applied an event the event serializer writes but cannot read back (the handle stage read back its
     * serialized form, {@code RingEventStore.asStored}): the command goes on to be stored, as on
     * {@code SimpleCommandBus}, and every later command of this aggregate fails as its load there would
     * ({@link #beginCommand}). Handle-stage thread.
     *
     * @param asStored the event as the store will give it back
     */
    void cannotBeReadBack(DomainEventMessage<?> asStored) {
        if (unreadable == null) {
            unreadable = asStored;
        }
    }

    /**
     * Right after {@link #beginCommand}: when one of the aggregate's events cannot be read back
     * ({@link #cannotBeReadBack}), reads the aggregate as {@code SimpleCommandBus}'s load would, the store's events
     * then those on their way with that one in its stored form, and fails as that load does (Axon's own exception):
     * the command fails, and as one built on this generation it is handled again should the event's own command be
     * refused by the store. Should the serializer read it now, the aggregate is as read. Handle-stage thread.
     *
     * @throws Exception what that load fails with
     */
    void failIfUnreadable() throws Exception {
        if (unreadable == null) {
            return;
        }
        aggregate = repository.readFromStore(identifier, sink, withUnreadable(notYetStored(null)));
        aggregateBeforeCommand = aggregate;
        evictionEpoch = repository.evictionEpoch();
        unreadable = null;
    }

    /** The events to replay with {@link #unreadable} in its stored form in place of the event it is. */
    private List<DomainEventMessage<?>> withUnreadable(List<DomainEventMessage<?>> replay) {
        for (int i = 0; i < replay.size(); i++) {
            if (replay.get(i).getSequenceNumber() == unreadable.getSequenceNumber()) {
                replay.set(i, unreadable);
            }
        }
        return replay;
    }

    private List<DomainEventMessage<?>> notYetStored(Borrower lentTo) {
        List<DomainEventMessage<?>> replay = new ArrayList<>(unstored);
        if (lentTo != null) {
            addOwned(lentTo.events(), replay);
        }
        return replay;
    }

    private void addOwned(List<? extends EventMessage<?>> events, List<DomainEventMessage<?>> into) {
        for (int i = 0; i < events.size(); i++) {
            if (owns(events.get(i))) {
                into.add((DomainEventMessage<?>) events.get(i));
            }
        }
    }

    private boolean ownsAny(List<? extends EventMessage<?>> events) {
        for (int i = 0; i < events.size(); i++) {
            if (owns(events.get(i))) {
                return true;
            }
        }
        return false;
    }

    EventSourcedAggregate<T> aggregate() {
        return aggregate;
    }

    /**
     * The events a command that expected an older version did not see ({@link RingConflictResolver}): the store's
     * after {@code expectedVersion}, then those handled and not yet stored, up to {@code actualVersion}. Handle-stage
     * thread, during that command.
     *
     * @throws Exception when the store cannot be read
     */
    List<DomainEventMessage<?>> eventsAfter(long expectedVersion, long actualVersion) throws Exception {
        List<DomainEventMessage<?>> events = new ArrayList<>();
        long last = expectedVersion;
        for (DomainEventMessage<?> event : repository.storedEventsFrom(identifier, expectedVersion + 1)) {
            if (event.getSequenceNumber() > last && event.getSequenceNumber() <= actualVersion) {
                events.add(event);
                last = event.getSequenceNumber();
            }
        }
        for (DomainEventMessage<?> event : unstored) {
            if (event.getSequenceNumber() > last && event.getSequenceNumber() <= actualVersion) {
                events.add(event);
                last = event.getSequenceNumber();
            }
        }
        return events;
    }

    /**
     * The handler of an instance command for this aggregate: what Axon's aggregate command handler does after
     * resolving the target and loading it (the same checks as {@link RingRepository#load(String, Long)}), without
     * resolving and looking it up a second time.
     *
     * @return a handler that runs a command on this aggregate, on the handle stage's thread
     */
    MessageHandler<CommandMessage<?>> commandHandler() {
        return commandHandler;
    }

    private Object handleInstanceCommand(CommandMessage<?> command) throws Exception {
        return repository.handleInstanceCommand(
                repository.checkedForCommand(identifier, this, slot.expectedVersion()), command);
    }

    void created(EventSourcedAggregate<T> created) {
        this.aggregate = created;
        if (identifier == null) {
            identifier = created.identifierAsString();
        }
    }

    void bind(Borrower slot) {
        this.slot = slot;
    }

    /**
     * @return true when the aggregate is lent to that command now: its own, or one run in place from its handler
     *         (its events go to that command's list), until the command succeeds or is restored
     */
    boolean lentTo(Borrower slot) {
        return this.slot == slot;
    }

    EventBus sink() {
        return sink;
    }

    // --- store stage -----------------------------------------------------------------------------------------------

    /**
     * @param generation the generation a slot's events were applied to
     * @return true when an append of this aggregate failed in that generation or a later one
     */
    boolean isPoisoned(int generation) {
        return generation <= poisonedGeneration();
    }

    /**
     * Acquire semantics, pairing with {@link #poison}: whoever sees a generation poisoned also sees what the poisoning
     * thread did before (the failed append's bookkeeping).
     *
     * @return the highest generation given up so far, or -1
     */
    int poisonedGeneration() {
        return marks.poisonedGeneration();
    }

    /**
     * Acquire semantics, pairing with {@link #storedUpTo}: the handle stage that sees a sequence number here also sees
     * the append that stored it, so it may drop those events from {@link #unstored} and read them from the store.
     *
     * @return the sequence number of this aggregate's last event known to be stored, or -1
     */
    long storedSequenceNumber() {
        return marks.storedSequenceNumber();
    }

    /**
     * Marks the aggregate's state of {@code generation} as untrustworthy: called by the store stage when an append
     * containing events of that generation failed, and by the handle stage before it handles a given-up generation's
     * commands again ({@link #restartFromStore}). Every later command of that generation is handled again or failed
     * by the store stage, and the next command rebuilds the aggregate from the store. Release semantics: the handle
     * stage that sees the mark also sees everything done before it.
     *
     * @param generation the generation to give up
     */
    void poison(int generation) {
        marks.poison(generation);
    }

    /**
     * Called by the store stage after a command's events were committed: records this aggregate's last event among
     * them as stored. Does nothing when none of them is this aggregate's.
     *
     * @param events the committed events of one command
     */
    void stored(List<? extends EventMessage<?>> events) {
        for (int i = events.size() - 1; i >= 0; i--) {
            EventMessage<?> event = events.get(i);
            if (owns(event)) {
                storedUpTo(((DomainEventMessage<?>) event).getSequenceNumber());
                return;
            }
        }
    }

    /**
     * Called by the store stage after this aggregate's events up to {@code sequenceNumber} were appended.
     * Release semantics: a plain store on x86, no fence on the store stage's path.
     */
    void storedUpTo(long sequenceNumber) {
        marks.storedUpTo(sequenceNumber);
    }

    /**
     * The command an aggregate is lent to, as its holder sees it: where the events the aggregate applies go, and the
     * version the command expects. The ring's slot ({@code CommandSlot}) is one; an interface of the holder's own, so
     * that the holder does not depend on the slot that refers to it (no dependency loop: {@code ArchitectureTest}).
     * Handle stage.
     */
    interface Borrower {

        /** @return the command's events, in the order its handler produced them; applied events are added here */
        List<EventMessage<?>> events();

        /** @return the version the command expects its target aggregate to have, or null */
        Long expectedVersion();
    }

    /**
     * The event bus each aggregate instance of this holder is given: it collects the events the aggregate applies
     * into the slot of the command being handled. Never used outside a handler.
     */
    private final class AppliedEventSink implements EventBus {

        @Override
        public void publish(EventMessage<?>... events) {
            for (EventMessage<?> event : events) {
                collect(event);
            }
        }

        @Override
        public void publish(List<? extends EventMessage<?>> events) {
            for (int i = 0; i < events.size(); i++) {
                collect(events.get(i));
            }
        }

        private void collect(EventMessage<?> event) {
            if (slot == null) {
                throw new IllegalStateException(
                        "Aggregate [" + identifier + "] applied an event outside a command handled by ringbus");
            }
            slot.events().add(event);
        }

        @Override
        public Registration subscribe(Consumer<List<? extends EventMessage<?>>> messageProcessor) {
            throw new UnsupportedOperationException("An aggregate's event sink has no subscribers");
        }

        @Override
        public Registration registerDispatchInterceptor(
                MessageDispatchInterceptor<? super EventMessage<?>> dispatchInterceptor) {
            throw new UnsupportedOperationException("An aggregate's event sink has no interceptors");
        }
    }
}
