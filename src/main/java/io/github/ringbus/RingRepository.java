package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.commandhandling.CommandMessageHandlingMember;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.AggregateDeletedException;
import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.eventsourcing.EventSourcedAggregate;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.conflictresolution.ConflictResolution;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventBus;
import org.axonframework.messaging.Message;
import org.axonframework.messaging.Scope;
import org.axonframework.messaging.ScopeDescriptor;
import org.axonframework.messaging.annotation.MessageHandlingMember;
import org.axonframework.messaging.MetaData;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.modelling.command.Aggregate;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.AggregateLifecycle;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.AggregateScopeDescriptor;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.ConflictingAggregateVersionException;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.RepositoryProvider;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;
import org.axonframework.modelling.command.inspection.AggregateModel;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The repository of one event-sourced aggregate type whose commands run through a
 * {@link io.github.ringbus.RingCommandBus}. Axon's {@code AggregateAnnotationCommandHandler} uses it exactly like
 * any other repository; underneath, the aggregate was already put in memory by the preload stage and the events it
 * applies are collected in the command's ring slot, for the store and publish stages.
 * <p>
 * <b>Threads.</b> Each part of an aggregate type belongs to the threads that use it. The preload stage's part (the
 * cache and the reads ahead) is {@link PreloadedAggregates}, its thread only. This class is Axon's repository for the
 * handler threads: {@code load}, {@code newInstance} and {@code loadOrCreate} run on a handle stage's thread, inside
 * the command's Unit of Work, and only for the aggregate the command targets. Loading any other aggregate from inside
 * a handler fails with an {@link IllegalStateException}: ringbus routes each command to the thread that owns its
 * target aggregate and no other. {@link #readFromStore} runs on whichever thread reads an aggregate (the preload
 * thread, a read-ahead thread, a handler thread reading again) and writes nothing of this class. A command handled
 * outside the ring, on another thread and in a Unit of Work of its own (a {@code SimpleCommandBus} the ring's
 * handlers are subscribed on too), is served by {@link OutsideRingRepository}, Axon's own repository reading from the
 * event store; once it has committed, the ring reads its cached aggregates again. Every field of this class is final
 * and set before the bus starts, except the way into the ring ({@link #deliverThrough}, set once while the bus is
 * built).
 * <p>
 * <b>Messages outside commands.</b> {@link #send} (how a deadline manager delivers a deadline to an aggregate) puts
 * the message in the ring like a command for the aggregate and waits for it on the caller's thread: the aggregate
 * handles it on its handler thread, in ring order with its commands, and the events it applies are stored by the
 * store stage. See {@link MessageDelivery}.
 *
 * @param <T> the aggregate root type
 * <p>
 * Tests: {@code PolymorphicAggregateTest}, {@code AggregateHolderTest}, {@code model.ConflictResolutionScenarioTest}.
 */
final class RingRepository<T> implements Repository<T>, AggregateHolder.Source<T> {

    private static final Logger logger = LoggerFactory.getLogger(RingRepository.class);

    private final Class<T> aggregateType;
    private final AggregateModel<T> model;
    private final AggregateFactory<T> aggregateFactory;
    private final EventStore eventStore;
    private final RepositoryProvider repositoryProvider;
    private final SnapshotTriggerDefinition snapshotTriggerDefinition;
    /** The preload stage's part: the cache and the reads ahead (its thread only). */
    private final PreloadedAggregates<T> preloaded;
    /** The bus's requests to read its aggregates from the store again ({@link AggregateHolder#beginCommand}). */
    private final CacheEvictions evictions;
    /** The transactions each read of an aggregate runs in (the bus's {@code readTransactionManager}). */
    private final TransactionManager readTransactions;
    private final Map<String, Boolean> createsAggregateByCommandName;
    /** The type names of the root and of every polymorphic subtype, as Axon writes them in domain events. */
    private final Set<String> typeNames;
    /** Creation commands whose preload reads nothing: the storage engine refuses a second creation by itself. */
    private final Set<String> createdWithoutRead;
    private final CommandTargetResolver targetResolver;
    private final InstanceCommandInvoker<T> instanceCommands;
    /** The preload stage's resolver: the aggregate's own, and the target of a {@link MessageDelivery}. */
    private final CommandTargetResolver preloadTargetResolver;
    private final MessageDelivery delivery;
    /** Axon's repository of this type, for commands handled outside the ring (threads that are not the ring's). */
    private final OutsideRingRepository<T> outsideRing;
    /** Puts a delivery in the ring; set by the bus that created this repository. */
    private volatile BiConsumer<CommandMessage<?>, CommandCallback<Object, Object>> ring;
    /**
     * Waits, at most the given nanoseconds, until every command put in the ring so far has completed; set by the bus
     * that created this repository.
     */
    private volatile CommandsSoFar commandsSoFar = timeoutNanos -> true;

    /** Waits for the commands put in the ring so far ({@code Pipeline.awaitCommandsSoFar}). */
    @FunctionalInterface
    interface CommandsSoFar {
        /** @return true when they all completed within the time */
        boolean await(long timeoutNanos) throws InterruptedException;
    }

    /** How long a delivery that found no aggregate waits for the commands ahead of it before it is tried again. */
    static final long DELIVERY_RETRY_WAIT_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
    /** Lends a handler an aggregate its command was not routed to; set by the bus that created this repository. */
    private volatile Lender lender = Lender.NONE;

    /**
     * Lends the handler running on this thread (of the command in {@code slot}) an aggregate its command was not
     * routed to, or says why it cannot: {@link NestedDispatch#lendForLoad}.
     */
    interface Lender {
        /** Without a bus: nothing is lent. */
        Lender NONE = (repository, identifier, slot) -> {
            throw new IllegalStateException(
                    "Command [" + slot.commandName() + "] asked for aggregate [" + identifier + "], which is not its "
                            + "target, of a ringbus repository that no bus lends aggregates through");
        };

        AggregateHolder<?> lend(RingRepository<?> repository, String identifier, CommandSlot slot) throws Exception;
    }

    /**
     * @param model                     the aggregate's model (its command and event sourcing handlers)
     * @param aggregateFactory          creates an empty aggregate root to replay events on
     * @param eventStore                the store aggregates are loaded from
     * @param repositoryProvider        gives aggregates access to other repositories (may be null)
     * @param snapshotTriggerDefinition decides when to snapshot an aggregate
     * @param cacheSize                 the most aggregates of this type to keep in memory
     * @param completedSequence         the ring sequence up to which every command has completed
     * @param targetResolver            finds a command's target aggregate, as the aggregate's command handler does
     */
    RingRepository(AggregateModel<T> model,
                          AggregateFactory<T> aggregateFactory,
                          EventStore eventStore,
                          RepositoryProvider repositoryProvider,
                          SnapshotTriggerDefinition snapshotTriggerDefinition,
                          int cacheSize,
                          LongSupplier completedSequence,
                          CommandTargetResolver targetResolver) {
        this(model, aggregateFactory, eventStore, repositoryProvider, snapshotTriggerDefinition, cacheSize,
             completedSequence, targetResolver, CacheEvictions.NONE, ColdReads.NONE, NoTransactionManager.INSTANCE);
    }

    /**
     * As the constructor above, with the bus's eviction requests ({@link RingCommandBus#evictCachedAggregates()}),
     * its threads for reads ahead and its read transaction manager (each read of an aggregate runs in a transaction of
     * it).
     */
    RingRepository(AggregateModel<T> model,
                   AggregateFactory<T> aggregateFactory,
                   EventStore eventStore,
                   RepositoryProvider repositoryProvider,
                   SnapshotTriggerDefinition snapshotTriggerDefinition,
                   int cacheSize,
                   LongSupplier completedSequence,
                   CommandTargetResolver targetResolver,
                   CacheEvictions evictions,
                   ColdReads coldReads,
                   TransactionManager readTransactions) {
        this.aggregateType = aggregateFactory.getAggregateType();
        this.model = Objects.requireNonNull(model, "model");
        this.aggregateFactory = aggregateFactory;
        this.eventStore = Objects.requireNonNull(eventStore, "eventStore");
        this.repositoryProvider = repositoryProvider;
        this.snapshotTriggerDefinition = Objects.requireNonNull(snapshotTriggerDefinition, "snapshotTriggerDefinition");
        this.evictions = evictions;
        this.readTransactions = Objects.requireNonNull(readTransactions, "readTransactions");
        this.createsAggregateByCommandName = AggregateCommandNames.of(model);
        this.typeNames = typeNamesOf(model);
        this.createdWithoutRead = skipsReadForCreation(AxonInternals.storageEngineOf(eventStore))
                ? AggregateCommandNames.alwaysCreating(model) : Set.of();
        this.targetResolver = Objects.requireNonNull(targetResolver, "targetResolver");
        this.instanceCommands = new InstanceCommandInvoker<>(model);
        this.preloadTargetResolver = command -> command instanceof MessageDelivery.Command
                ? new VersionedAggregateIdentifier(((MessageDelivery.Command) command).target(), null)
                : this.targetResolver.resolveTarget(command);
        this.delivery = new MessageDelivery(aggregateType(), this::deliver);
        this.preloaded = new PreloadedAggregates<>(this, cacheSize, completedSequence, coldReads);
        this.outsideRing = new OutsideRingRepository<>(model, aggregateFactory, eventStore, repositoryProvider,
                                                       snapshotTriggerDefinition, evictions);
    }

    /**
     * @return the resolver that finds the targets of this aggregate type's commands (the aggregate's own resolver),
     * and of the messages {@link #send} puts in the ring
     */
    CommandTargetResolver targetResolver() {
        return preloadTargetResolver;
    }

    /**
     * @return the ring's handler of the messages {@link #send} delivers to this type's aggregates; the bus routes
     * its {@link MessageDelivery#commandName()} to this repository
     */
    MessageDelivery delivery() {
        return delivery;
    }

    /**
     * Connects {@link #send} to the ring: called once by the bus that created this repository.
     *
     * @param ring puts an internal command in the ring (without dispatch interceptors) and calls the callback when
     *             it completed
     */
    void deliverThrough(BiConsumer<CommandMessage<?>, CommandCallback<Object, Object>> ring) {
        this.ring = Objects.requireNonNull(ring, "ring");
    }

    /**
     * Lets {@link #send} wait for the commands ahead of a delivery that found no aggregate: called once by the bus
     * that created this repository.
     */
    void awaitCommandsThrough(CommandsSoFar commandsSoFar) {
        this.commandsSoFar = Objects.requireNonNull(commandsSoFar, "commandsSoFar");
    }

    /**
     * Connects loads of aggregates a command was not routed to to the bus that lends them: called once by the bus
     * that created this repository.
     */
    void lendThrough(Lender lender) {
        this.lender = Objects.requireNonNull(lender, "lender");
    }

    /**
     * @return the aggregate type name the store has for the identifier (that of its first event, or snapshot), or
     *         null when it has no event of it. In one transaction of the read transaction manager; any thread
     * @throws Exception when the store cannot be read
     */
    String storedTypeOf(String identifier) throws Exception {
        return inReadTransaction(() -> {
            DomainEventStream stream = eventStore instanceof RingEventStore ringStore
                    ? ringStore.readStoredEvents(identifier) : eventStore.readEvents(identifier);
            return stream.hasNext() ? stream.peek().getType() : null;
        });
    }

    /**
     * Runs a read in one transaction of the read transaction manager (none with {@link NoTransactionManager}):
     * committed after the read, rolled back when it fails.
     */
    private <R> R inReadTransaction(Callable<R> read) throws Exception {
        if (readTransactions == NoTransactionManager.INSTANCE) {
            return read.call();
        }
        Transaction transaction = readTransactions.startTransaction();
        R result;
        try {
            result = read.call();
        } catch (Throwable failure) {
            try {
                transaction.rollback();
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
            throw failure;
        }
        transaction.commit(); // read only; a participating transaction's commit does nothing
        return result;
    }

    /**
     * @return the names of the commands handled by this aggregate type, each mapped to whether it may create the
     * aggregate (a constructor or factory handler, or a creation policy other than {@code NEVER})
     */
    Map<String, Boolean> commandNames() {
        return createsAggregateByCommandName;
    }

    /**
     * @param commandName a command of this aggregate type
     * @return true when the command always creates a new aggregate and the storage engine is one on which its
     * preload reads nothing from the store, as Axon's own repositories never do for a creation (see
     * {@link #skipsReadForCreation(EventStorageEngine)})
     */
    boolean createsWithoutRead(String commandName) {
        return createdWithoutRead.contains(commandName);
    }

    /**
     * Whether a creation command may skip the read of the store on a cache miss, as Axon's own repositories do. Yes
     * on Axon's JDBC and JPA engines (and their subclasses): the unique key on (aggregate identifier, sequence number)
     * of the schema they create refuses a second creation at the append. Yes on Axon's in-memory engine, which has no
     * such key and reads an aggregate by scanning every event it holds (a creation-only load would slow down with
     * every event stored): there ringbus does what Axon's buses do on it, and refuses a second creation only of an
     * aggregate it has in memory. No for any other engine, of which nothing is known: there the preload reads, so
     * that creating an aggregate that exists fails instead of storing a second history.
     *
     * @param engine the storage engine behind the event store, or null when it cannot be known
     */
    static boolean skipsReadForCreation(EventStorageEngine engine) {
        return AxonInternals.isAxonStorageEngine(engine);
    }

    /**
     * @return true when the type name is the one Axon puts in the domain events of this type's aggregates: that of the
     * root or, for a polymorphic aggregate, of any of its subtypes (Axon writes the declared type of the instance's
     * own class)
     */
    @Override
    public boolean hasTypeName(String type) {
        return typeNames.contains(type);
    }

    /**
     * The type names Axon writes in the domain events of a model's aggregates: for each class of the model (the root
     * and its polymorphic subtypes), its declared type, or its simple name ({@code AnnotatedAggregate.createMessage}).
     */
    static Set<String> typeNamesOf(AggregateModel<?> model) {
        Set<String> names = new java.util.HashSet<>();
        names.add(model.type());
        model.types().forEach(t -> names.add(model.declaredType(t).orElse(t.getSimpleName())));
        return Set.copyOf(names);
    }

    /**
     * @return the aggregate root type
     */
    Class<T> aggregateType() {
        return aggregateType;
    }

    // --- preload stage ---------------------------------------------------------------------------------------------

    /** @return this type's aggregates in memory and their reads ahead: the preload stage's part, its thread only */
    PreloadedAggregates<T> preloaded() {
        return preloaded;
    }

    /**
     * @return how many times the bus was asked to read its aggregates from the store again; any thread
     */
    @Override
    public long evictionEpoch() {
        return evictions.epoch();
    }

    @Override
    public long namedEvictionEpoch() {
        return evictions.namedEpoch();
    }

    @Override
    public boolean evictionNamedSince(String identifier, long seen) {
        return evictions.namedSince(aggregateType, identifier, seen);
    }


    /**
     * Reads the aggregate's events from the store, followed by the given events that are handled but perhaps not yet
     * stored (events the store already returned are skipped by sequence number). The whole read (snapshot look-up and
     * every batch of events) runs in one transaction of the bus's read transaction manager: Axon's JDBC and JPA
     * engines otherwise run each of those steps in a transaction of its own (a connection taken and committed each
     * time); in {@code JdbcTransactionManager.autoCommitReads()} that one transaction is one connection without a
     * {@code COMMIT}.
     * Any thread; nothing of this repository's state is written.
     *
     * @return the aggregate, or null when there is no event of it
     */
    @Override
    public EventSourcedAggregate<T> readFromStore(String identifier, EventBus sink,
                                                  List<DomainEventMessage<?>> unstored) throws Exception {
        if (readTransactions == NoTransactionManager.INSTANCE) {
            return read(identifier, sink, unstored); // no lambda on the in-memory path
        }
        return inReadTransaction(() -> read(identifier, sink, unstored));
    }

    private EventSourcedAggregate<T> read(String identifier, EventBus sink,
                                          List<DomainEventMessage<?>> unstored) throws Exception {
        // Not eventStore.readEvents on a RingEventStore: inside a ring command it adds that command's events, which
        // the holder replays itself where they count (and must not, for a command that failed).
        DomainEventStream stream = eventStore instanceof RingEventStore ring
                ? ring.readStoredEvents(identifier) : eventStore.readEvents(identifier);
        if (!unstored.isEmpty()) {
            stream = DomainEventStream.concat(stream, DomainEventStream.of(unstored));
        }
        if (!stream.hasNext()) {
            return null;
        }
        T root = aggregateFactory.createAggregateRoot(identifier, stream.peek());
        EventSourcedAggregate<T> aggregate = EventSourcedAggregate.initialize(
                root, model, sink, repositoryProvider, snapshotTriggerDefinition.prepareTrigger(aggregateType)
        );
        aggregate.initializeState(stream);
        return aggregate;
    }

    // --- handle stage: Axon's Repository ---------------------------------------------------------------------------

    @Override
    public Aggregate<T> load(String aggregateIdentifier) {
        return load(aggregateIdentifier, null);
    }

    @Override
    public Aggregate<T> load(String aggregateIdentifier, Long expectedVersion) {
        if (OutsideRingRepository.serves()) {
            return outsideRing.served(outsideRing.repository().load(aggregateIdentifier, expectedVersion));
        }
        return checkedForCommand(aggregateIdentifier, targetOfCurrentCommand(aggregateIdentifier), expectedVersion);
    }

    /** Runs a command on an aggregate that exists, on the handle stage's thread, as Axon's aggregate would. */
    @Override
    public Object handleInstanceCommand(EventSourcedAggregate<T> aggregate, CommandMessage<?> command)
            throws Exception {
        return instanceCommands.handle(aggregate, command);
    }

    /**
     * The checks Axon's event-sourcing repository makes when a command loads an aggregate: it exists and is not
     * deleted; and with an expected version ({@code @TargetAggregateVersion}), one from the future fails at once, and
     * an older one hands the command a conflict resolver over the events it did not see ({@link RingConflictResolver},
     * Axon's {@code ConflictResolver} parameter), failing the command at prepare-commit when its handler never asked.
     */
    @Override
    public EventSourcedAggregate<T> checkedForCommand(String aggregateIdentifier, AggregateHolder<T> holder,
                                                      Long expectedVersion) {
        EventSourcedAggregate<T> aggregate = holder.aggregate();
        if (aggregate == null) {
            throw new AggregateNotFoundException(aggregateIdentifier,
                                                 "The aggregate was not found in the event store");
        }
        if (aggregate.isDeleted()) {
            throw new AggregateDeletedException(aggregateIdentifier);
        }
        if (expectedVersion == null) {
            return aggregate; // the common path: no version() call, which boxes a long
        }
        Long version = aggregate.version();
        if (version != null && !expectedVersion.equals(version)) {
            if (expectedVersion > version) {
                throw new ConflictingAggregateVersionException(aggregateIdentifier, expectedVersion, version);
            }
            RingConflictResolver resolver = new RingConflictResolver(holder, aggregateIdentifier, expectedVersion,
                                                                     version);
            ConflictResolution.initialize(resolver);
            CurrentUnitOfWork.get().onPrepareCommit(u -> resolver.ensureConflictsResolved());
        }
        return aggregate;
    }

    @Override
    public List<DomainEventMessage<?>> storedEventsFrom(String identifier, long firstSequenceNumber)
            throws Exception {
        EventStorageEngine engine = AxonInternals.storageEngineOf(eventStore);
        return inReadTransaction(() -> {
            DomainEventStream stream = engine != null ? engine.readEvents(identifier, firstSequenceNumber)
                    : eventStore.readEvents(identifier, firstSequenceNumber);
            List<DomainEventMessage<?>> events = new java.util.ArrayList<>();
            stream.forEachRemaining(events::add);
            return events;
        });
    }

    @Override
    public Aggregate<T> newInstance(Callable<T> factoryMethod) throws Exception {
        return newInstance(factoryMethod, a -> {
        });
    }

    @Override
    public Aggregate<T> newInstance(Callable<T> factoryMethod, Consumer<Aggregate<T>> initMethod) throws Exception {
        if (OutsideRingRepository.serves()) {
            return outsideRing.served(outsideRing.repository().newInstance(factoryMethod, initMethod));
        }
        CommandSlot slot = currentSlot();
        // A creation command sent from another aggregate's handler runs in place on the holder NestedDispatch gave
        // it, and creates the aggregate there (or finds it exists); createNew from that aggregate's own handler
        // creates alongside, as from any live aggregate.
        AggregateHolder<T> holder = inPlaceTargetOf(slot);
        if (holder == null || calledBy(holder)) {
            if (sentBesideTheRing(slot) && handlesCurrentCommand()) {
                // A creation command of this aggregate sent on a bus beside the ring (from any handler, an aggregate's
                // too): later commands the handler sends on that bus find the new aggregate (targetOfCurrentCommand).
                return createAlongside(slot, factoryMethod, initMethod).aggregate();
            }
            if (calledByALiveAggregate() || !handlesCurrentCommand()) {
                // createNew from a live aggregate, or a handler that is not this aggregate's (an external command
                // handler) asking for a new one: created beside the command's own aggregate, if any. The command's
                // later loads of it, and the commands it sends to it and waits for, find it (targetOfCurrentCommand,
                // NestedDispatch), as in Axon's Unit of Work.
                return createAlongside(slot, factoryMethod, initMethod).aggregate();
            }
            holder = ownHolder(slot);
        }
        if (holder == null) {
            // A creation command that names no target: the identifier is known once the aggregate exists.
            holder = new AggregateHolder<>(this, null);
            holder.bind(slot);
            slot.adoptCreatedAggregate(holder);
        } else if (holder.aggregate() != null) {
            throw new AggregateStreamCreationException(
                    "Aggregate [" + aggregateType.getSimpleName() + "] with identifier [" + holder.identifier()
                            + "] already exists; command [" + slot.commandName() + "] cannot create it again");
        }
        EventSourcedAggregate<T> aggregate = initializeNew(holder, factoryMethod, initMethod);
        String created = aggregate.identifierAsString();
        if (holder.identifier() != null && created != null && !holder.identifier().equals(created)) {
            throw new IllegalStateException(
                    "Command [" + slot.commandName() + "] targets aggregate [" + holder.identifier()
                            + "] but its handler created aggregate [" + created + "]");
        }
        holder.created(aggregate);
        return aggregate;
    }

    /**
     * {@code AggregateLifecycle.createNew} from the handler of another aggregate (of this type or another): creates
     * the aggregate on the handler's thread, and its events join the command's in the slot, so they are stored in the
     * command's batch and transaction, after the events the handler applied before, and vanish if the command fails.
     * The new aggregate is not put in the cache, which only the preload stage touches: its first command reads it
     * from the store, where it is once the creating command has completed. A duplicate identifier is refused by the
     * storage engine's unique constraint (JDBC, JPA), as for any creation.
     */
    private AggregateHolder<T> createAlongside(CommandSlot slot, Callable<T> factoryMethod,
                                               Consumer<Aggregate<T>> initMethod) throws Exception {
        AggregateHolder<T> holder = new AggregateHolder<>(this, null);
        holder.bind(slot);
        holder.created(initializeNew(holder, factoryMethod, initMethod));
        if (holder.identifier() != null) {
            slot.ledger.createdAlongside(holder);
        }
        return holder;
    }

    /** A new aggregate from its factory method, applying its events into the holder's slot. */
    private EventSourcedAggregate<T> initializeNew(AggregateHolder<T> holder, Callable<T> factoryMethod,
                                                   Consumer<Aggregate<T>> initMethod) throws Exception {
        EventSourcedAggregate<T> aggregate = EventSourcedAggregate.initialize(
                factoryMethod, model, holder.sink(), repositoryProvider,
                snapshotTriggerDefinition.prepareTrigger(aggregateType)
        );
        initMethod.accept(aggregate);
        return aggregate;
    }

    /** True when the handler running now is {@code holder}'s aggregate's own (its scope is current). */
    private static boolean calledBy(AggregateHolder<?> holder) {
        try {
            return holder.aggregate() != null && Scope.getCurrentScope() == holder.aggregate();
        } catch (IllegalStateException noScope) {
            return false;
        }
    }

    /**
     * True when an aggregate's handler is running on this thread: the repository is then asked for a new aggregate
     * by {@code AggregateLifecycle.createNew}, not by a creation command's handler (which calls the repository
     * before any aggregate exists).
     */
    private static boolean calledByALiveAggregate() {
        try {
            return Scope.getCurrentScope() instanceof AggregateLifecycle;
        } catch (IllegalStateException noScope) {
            return false;
        }
    }

    @Override
    public Aggregate<T> loadOrCreate(String aggregateIdentifier, Callable<T> factoryMethod) throws Exception {
        if (OutsideRingRepository.serves()) {
            return outsideRing.served(outsideRing.repository().loadOrCreate(aggregateIdentifier, factoryMethod));
        }
        AggregateHolder<T> existingHolder = targetOfCurrentCommand(aggregateIdentifier);
        EventSourcedAggregate<T> existing = existingHolder.aggregate();
        if (existing != null) {
            // A deleted aggregate is not missing, and a command never runs on it: Axon's repositories would create
            // it again over its stored history, which a store with a unique key refuses (the in-memory engine stores
            // a second history).
            return checkedForCommand(aggregateIdentifier, existingHolder, null);
        }
        return newInstance(factoryMethod);
    }

    /**
     * Delivers a message (a deadline) to the aggregate the scope names, as Axon's repositories do: the aggregate
     * handles it inside its own scope, and nothing happens when the scope is not one of this type's aggregates.
     * <p>
     * The message goes through the ring like a command for the aggregate: preloaded, handled on the handler thread
     * that owns the aggregate, in ring order with its commands (never beside them), its events stored by the store
     * stage. The caller's thread waits until it completed. The aggregate's failure is thrown here, so the deadline
     * manager reports it (and retries, if it does) as with Axon's repositories, and the events the aggregate applied
     * are discarded on any exception. An aggregate that does not exist or was deleted is skipped with a debug log, as
     * Axon's repositories do. The ring's command dispatch and handler interceptors and its message monitor do not
     * see the message; the correlation data of the caller's Unit of Work (the deadline manager's, with its handler
     * interceptors) is given to the events the aggregate applies.
     *
     * @throws IllegalStateException when called on a ringbus pipeline thread, which would wait for itself, or before
     *                               the repository was connected to a bus
     * @throws Exception             the aggregate's failure, or the ring's (full, shut down, not started)
     */
    @Override
    public void send(Message<?> message, ScopeDescriptor scopeDescription) throws Exception {
        if (!canResolve(scopeDescription)) {
            return;
        }
        String identifier = String.valueOf(((AggregateScopeDescriptor) scopeDescription).getIdentifier());
        if (PipelineThreads.isPipelineThread()) {
            throw new IllegalStateException(
                    "A message for aggregate [" + aggregateType.getSimpleName() + "] with identifier [" + identifier
                            + "] was sent from ringbus pipeline thread [" + Thread.currentThread().getName()
                            + "], which cannot wait for the ring it serves; send it from another thread (a deadline "
                            + "manager's own threads)");
        }
        BiConsumer<CommandMessage<?>, CommandCallback<Object, Object>> target = ring;
        if (target == null) {
            throw new IllegalStateException("The ringbus repository of [" + aggregateType.getSimpleName()
                                                    + "] is not connected to a RingCommandBus");
        }
        MetaData correlationData = CurrentUnitOfWork.correlationData();
        CommandResultMessage<?> result = deliverOnce(target, message, identifier, correlationData);
        if (result.isExceptional() && result.exceptionResult() instanceof AggregateNotFoundException
                && !(result.exceptionResult() instanceof AggregateDeletedException)
                && commandsSoFar.await(DELIVERY_RETRY_WAIT_NANOS)) {
            // An aggregate created by a command that named no target is in no cache until its events are stored (the
            // preload stage learns its identifier only then, from the store): a deadline its creation scheduled at
            // once, or in the past, may reach the ring before those events are stored, and find nothing. Once every
            // command put in the ring so far has completed, the store holds it: delivered once more. On
            // SimpleCommandBus the deadline finds it, since the creation's events are appended before the deadline
            // is scheduled (both at prepare-commit). Only on this path: a delivery that found its aggregate is not
            // delayed.
            result = deliverOnce(target, message, identifier, correlationData);
        }
        if (!result.isExceptional()) {
            return;
        }
        Throwable failure = result.exceptionResult();
        if (failure instanceof AggregateNotFoundException) {
            logger.debug("Aggregate [{}] with identifier [{}] was not found or is deleted: message [{}] is not "
                                 + "handled", aggregateType.getSimpleName(), identifier, message);
            return;
        }
        if (failure instanceof Exception) {
            throw (Exception) failure;
        }
        if (failure instanceof Error) {
            throw (Error) failure;
        }
        throw new IllegalStateException(failure);
    }

    private CommandResultMessage<?> deliverOnce(BiConsumer<CommandMessage<?>, CommandCallback<Object, Object>> target,
                                                Message<?> message, String identifier,
                                                MetaData correlationData) {
        FutureCallback<Object, Object> completion = new FutureCallback<>();
        target.accept(delivery.command(message, identifier, correlationData), completion);
        return completion.getResult();
    }

    /** Runs a delivered message on its aggregate, on the handle stage's thread (see {@link MessageDelivery}). */
    Object deliver(String identifier, Message<?> message) throws Exception {
        return checkedForCommand(identifier, targetOfCurrentCommand(identifier), null).handle(message);
    }

    /**
     * As Axon's repositories: a scope of an aggregate whose type is the simple name, or the declared type, of this
     * aggregate type or one of its subtypes.
     */
    @Override
    public boolean canResolve(ScopeDescriptor scopeDescription) {
        if (!(scopeDescription instanceof AggregateScopeDescriptor)) {
            return false;
        }
        String type = ((AggregateScopeDescriptor) scopeDescription).getType();
        return model.types().anyMatch(t -> t.getSimpleName().equals(type)
                || model.declaredType(t).map(type::equals).orElse(false));
    }

    /**
     * The aggregate of this type that a command sent from the slot's handler runs on in place (a creation command
     * among them creates it there: {@link NestedDispatch}), or null.
     */
    @SuppressWarnings("unchecked")
    private AggregateHolder<T> inPlaceTargetOf(CommandSlot slot) {
        AggregateHolder<?> inPlace = slot.ledger.inPlaceTarget();
        return inPlace != null && inPlace.repository() == this ? (AggregateHolder<T>) inPlace : null;
    }

    @SuppressWarnings("unchecked")
    private AggregateHolder<T> targetOfCurrentCommand(String aggregateIdentifier) {
        CommandSlot slot = currentSlot();
        AggregateHolder<?> inPlace = slot.ledger.inPlaceTarget();
        if (inPlace != null && inPlace.repository() == this && aggregateIdentifier.equals(inPlace.identifier())) {
            // A command for another aggregate, sent and waited for from this slot's handler, runs in place on it.
            return (AggregateHolder<T>) inPlace;
        }
        if (sentBesideTheRing(slot)) {
            AggregateHolder<?> createdBeside = slot.ledger.createdAlongside(this, aggregateIdentifier);
            boolean own = slot.holder != null && slot.repository == this
                    && aggregateIdentifier.equals(slot.holder.identifier());
            if (!own && createdBeside == null) {
                throw refusedBesideTheRing(slot, aggregateIdentifier);
            }
            // The sender's own aggregate, which this thread owns, or one an earlier command it sent on that bus
            // created: it runs here, as on Axon's bus. Should it roll back, what it applied cannot be taken out of
            // the aggregate alone: the sender's command fails with it.
            UnitOfWork<?> nested = CurrentUnitOfWork.get();
            String nestedName = ((CommandMessage<?>) nested.getMessage()).getCommandName();
            nested.onRollback(u -> {
                if (slot.unitOfWork.phase() != UnitOfWork.Phase.STARTED) {
                    return; // the sender's own Unit of Work rolls back (it fails, or is handled again): nothing to add
                }
                Throwable cause = u.getExecutionResult() != null && u.getExecutionResult().isExceptionResult()
                        ? u.getExecutionResult().getExceptionResult() : null;
                slot.unitOfWork.onPrepareCommit(p -> {
                    throw new IllegalStateException(
                            "Command [" + slot.commandName() + "] fails because command [" + nestedName + "], which "
                                    + "its handler sent to aggregate [" + aggregateIdentifier + "] ("
                                    + (own ? "its own" : "created by a command it sent there before") + ") on a "
                                    + "command bus beside the ring, rolled back", cause);
                });
            });
            if (!own) {
                return (AggregateHolder<T>) createdBeside;
            }
        }
        if (slot.repository == this && slot.holder != null && aggregateIdentifier.equals(slot.holder.identifier())) {
            return (AggregateHolder<T>) slot.holder; // the command's target, preloaded
        }
        AggregateHolder<?> created = slot.ledger.createdAlongside(this, aggregateIdentifier);
        if (created != null) {
            return (AggregateHolder<T>) created; // created by this command beside its own target: not stored yet
        }
        if (slot.repository == this && slot.holder == null && !handlesCurrentCommand()
                && aggregateIdentifier.equals(NamedTargets.of(slot.command))) {
            // A plain handler's command that names this aggregate, routed here: the preload stage found none.
            throw new AggregateNotFoundException(aggregateIdentifier, "The aggregate was not found in the event store");
        }
        // Not the command's target: an external command handler's load, or an aggregate's handler loading another
        // aggregate through an injected repository, as Axon's repositories allow.
        try {
            return (AggregateHolder<T>) lender.lend(this, aggregateIdentifier, slot);
        } catch (RuntimeException | Error failure) {
            throw failure;
        } catch (Exception unreadable) {
            throw new EventStoreException("Aggregate [" + aggregateIdentifier + "] of [" + aggregateType.getSimpleName()
                                                  + "] could not be read from the event store", unreadable);
        }
    }

    /** True when the current Unit of Work's command is one of this aggregate type's own (or a message delivered to it). */
    private boolean handlesCurrentCommand() {
        String name = ((CommandMessage<?>) CurrentUnitOfWork.get().getMessage()).getCommandName();
        return createsAggregateByCommandName.containsKey(name) || name.equals(delivery.commandName());
    }

    /**
     * True when the current Unit of Work is nested in the slot's and handles a command that is not the slot's own: a
     * ring handler sent it on a bus beside the ring (an injected {@code SimpleCommandBus}), which runs it at once on
     * this thread in a Unit of Work nested in the slot's, as Axon runs nested commands. (Commands the ring itself runs
     * in place are routed by {@link NestedDispatch} and never ask for another aggregate than theirs.)
     */
    private static boolean sentBesideTheRing(CommandSlot slot) {
        UnitOfWork<?> current = CurrentUnitOfWork.get();
        return current != current.root() && current.getMessage() instanceof CommandMessage<?>
                && !SlotUnitOfWork.runInPlace(current);
    }

    /**
     * A ring handler sent, on a bus beside the ring, a command for an aggregate other than its own: this thread does
     * not own that aggregate (another handler thread may be changing it, or its commands wait in the ring), so it
     * cannot run here. Rather than let the sender's command succeed without it (a fire-and-forget dispatch would only
     * log the failure), the sender's command fails too, in its prepare-commit phase, with the same explanation.
     */
    private IllegalStateException refusedBesideTheRing(CommandSlot slot, String aggregateIdentifier) {
        String nested = ((CommandMessage<?>) CurrentUnitOfWork.get().getMessage()).getCommandName();
        IllegalStateException refusal = new IllegalStateException(
                "Command [" + nested + "] for aggregate [" + aggregateIdentifier + "] of ["
                        + aggregateType.getSimpleName() + "] was sent from the handler of command ["
                        + slot.commandName() + "] on a command bus beside the ring (an injected SimpleCommandBus), "
                        + "which runs it on this ringbus thread; this thread does not own that aggregate, so the "
                        + "command cannot run here, and command [" + slot.commandName() + "] fails with it. Send it "
                        + "on the ring's CommandGateway or CommandBus instead (it then runs in place where it can, or "
                        + "after this command); creating aggregates on the side bus from a ring handler works: they "
                        + "are stored with the sending command");
        slot.unitOfWork.onPrepareCommit(u -> {
            throw new IllegalStateException(refusal.getMessage(), refusal);
        });
        return refusal;
    }

    @SuppressWarnings("unchecked")
    private AggregateHolder<T> ownHolder(CommandSlot slot) {
        if (slot.repository != this) {
            throw new IllegalStateException(
                    "Command [" + slot.commandName() + "] was not routed to aggregate type ["
                            + aggregateType.getSimpleName() + "]; its handler cannot use this repository");
        }
        return (AggregateHolder<T>) slot.holder;
    }

    private CommandSlot currentSlot() {
        if (CurrentUnitOfWork.isStarted()) {
            // root: a command for this aggregate sent from its own handler runs in place in a nested Unit of Work
            UnitOfWork<?> unitOfWork = CurrentUnitOfWork.get().root();
            if (unitOfWork instanceof SlotUnitOfWork) {
                return (CommandSlot) ((SlotUnitOfWork) unitOfWork).slot(); // every slot's serves a CommandSlot
            }
        }
        throw new IllegalStateException(
                "The ringbus repository of [" + aggregateType.getSimpleName() + "] is used outside a command "
                        + "handled by ringbus");
    }
}
