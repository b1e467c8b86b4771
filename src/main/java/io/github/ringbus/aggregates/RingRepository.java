package io.github.ringbus.aggregates;

import io.github.ringbus.stages.CommandSlot;
import io.github.ringbus.stages.SlotUnitOfWork;
import org.axonframework.eventsourcing.AggregateDeletedException;
import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.eventsourcing.EventSourcedAggregate;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.messaging.Message;
import org.axonframework.messaging.ScopeDescriptor;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.modelling.command.Aggregate;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.AggregateScopeDescriptor;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.ConflictingAggregateVersionException;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.RepositoryProvider;
import org.axonframework.modelling.command.inspection.AggregateModel;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import java.util.function.LongSupplier;

/**
 * The repository of one event-sourced aggregate type whose commands run through a
 * {@link io.github.ringbus.RingCommandBus}. Axon's {@code AggregateAnnotationCommandHandler} uses it exactly like
 * any other repository; underneath, the aggregate was already put in memory by the preload stage and the events it
 * applies are collected in the command's ring slot, for the store and publish stages.
 * <p>
 * <b>Threads.</b> {@link #preload} runs on the preload stage's thread only; {@code load}, {@code newInstance} and
 * {@code loadOrCreate} run on a handle stage's thread, inside the command's Unit of Work, and only for the aggregate
 * the command targets. Loading any other aggregate from inside a handler fails with an {@link IllegalStateException}:
 * ringbus routes each command to the thread that owns its target aggregate and no other.
 *
 * @param <T> the aggregate root type
 */
public final class RingRepository<T> implements Repository<T> {

    private final Class<T> aggregateType;
    private final AggregateModel<T> model;
    private final AggregateFactory<T> aggregateFactory;
    private final EventStore eventStore;
    private final RepositoryProvider repositoryProvider;
    private final SnapshotTriggerDefinition snapshotTriggerDefinition;
    private final AggregateCache<T> cache;
    private final Map<String, Boolean> createsAggregateByCommandName;
    private final CommandTargetResolver targetResolver;
    private final InstanceCommandInvoker<T> instanceCommands;

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
    public RingRepository(AggregateModel<T> model,
                          AggregateFactory<T> aggregateFactory,
                          EventStore eventStore,
                          RepositoryProvider repositoryProvider,
                          SnapshotTriggerDefinition snapshotTriggerDefinition,
                          int cacheSize,
                          LongSupplier completedSequence,
                          CommandTargetResolver targetResolver) {
        this.aggregateType = aggregateFactory.getAggregateType();
        this.model = Objects.requireNonNull(model, "model");
        this.aggregateFactory = aggregateFactory;
        this.eventStore = Objects.requireNonNull(eventStore, "eventStore");
        this.repositoryProvider = repositoryProvider;
        this.snapshotTriggerDefinition = Objects.requireNonNull(snapshotTriggerDefinition, "snapshotTriggerDefinition");
        this.cache = new AggregateCache<>(cacheSize, completedSequence);
        this.createsAggregateByCommandName = AggregateCommandNames.of(model);
        this.targetResolver = Objects.requireNonNull(targetResolver, "targetResolver");
        this.instanceCommands = new InstanceCommandInvoker<>(model);
    }

    /**
     * @return the resolver that finds this aggregate type's commands' targets
     */
    public CommandTargetResolver targetResolver() {
        return targetResolver;
    }

    /**
     * @return the names of the commands handled by this aggregate type, each mapped to whether it may create the
     * aggregate (a constructor or factory handler, or a creation policy other than {@code NEVER})
     */
    public Map<String, Boolean> commandNames() {
        return createsAggregateByCommandName;
    }

    /**
     * @return the aggregate root type
     */
    public Class<T> aggregateType() {
        return aggregateType;
    }

    // --- preload stage ---------------------------------------------------------------------------------------------

    /**
     * Puts the aggregate with the given identifier in memory for the command in ring slot {@code slotSequence}: from
     * the cache, or read from the event store on a miss. Preload-stage thread only.
     *
     * @param identifier   the command's target aggregate identifier
     * @param creates      whether the command may create the aggregate
     * @param slotSequence the ring sequence of the command's slot
     * @return the holder, or null when the aggregate does not exist and the command cannot create it
     * @throws Exception when the event store cannot be read
     */
    public AggregateHolder<T> preload(String identifier, boolean creates, long slotSequence) throws Exception {
        AggregateHolder<T> holder = cache.get(identifier);
        if (holder == null) {
            holder = new AggregateHolder<>(this, identifier);
            holder.loaded(readFromStore(identifier, holder, List.of()));
            if (holder.aggregate() == null && !creates) {
                return null;
            }
            cache.put(identifier, holder);
        }
        holder.referencedBy(slotSequence);
        return holder;
    }

    /**
     * @return how many aggregates of this type are in memory
     */
    public int cachedAggregates() {
        return cache.size();
    }

    /**
     * Reads the aggregate's events from the store, followed by the given events that are handled but perhaps not yet
     * stored (events the store already returned are skipped by sequence number).
     *
     * @return the aggregate, or null when there is no event of it
     */
    EventSourcedAggregate<T> readFromStore(String identifier, AggregateHolder<T> holder,
                                           List<DomainEventMessage<?>> unstored) throws Exception {
        DomainEventStream stream = eventStore.readEvents(identifier);
        if (!unstored.isEmpty()) {
            stream = DomainEventStream.concat(stream, DomainEventStream.of(unstored));
        }
        if (!stream.hasNext()) {
            return null;
        }
        T root = aggregateFactory.createAggregateRoot(identifier, stream.peek());
        EventSourcedAggregate<T> aggregate = EventSourcedAggregate.initialize(
                root, model, holder.sink(), repositoryProvider, snapshotTriggerDefinition.prepareTrigger(aggregateType)
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
        return checkedForCommand(aggregateIdentifier, targetOfCurrentCommand(aggregateIdentifier).aggregate(),
                                 expectedVersion);
    }

    /** Runs a command on an aggregate that exists, on the handle stage's thread, as Axon's aggregate would. */
    Object handleInstanceCommand(EventSourcedAggregate<T> aggregate, CommandMessage<?> command) throws Exception {
        return instanceCommands.handle(aggregate, command);
    }

    /** The checks Axon's repositories make when a command loads an aggregate. */
    EventSourcedAggregate<T> checkedForCommand(String aggregateIdentifier, EventSourcedAggregate<T> aggregate,
                                               Long expectedVersion) {
        if (aggregate == null) {
            throw new AggregateNotFoundException(aggregateIdentifier,
                                                 "The aggregate was not found in the event store");
        }
        if (aggregate.isDeleted()) {
            throw new AggregateDeletedException(aggregateIdentifier);
        }
        if (expectedVersion != null && aggregate.version() != null && aggregate.version() > expectedVersion) {
            throw new ConflictingAggregateVersionException(aggregateIdentifier, expectedVersion, aggregate.version());
        }
        return aggregate;
    }

    @Override
    public Aggregate<T> newInstance(Callable<T> factoryMethod) throws Exception {
        return newInstance(factoryMethod, a -> {
        });
    }

    @Override
    public Aggregate<T> newInstance(Callable<T> factoryMethod, Consumer<Aggregate<T>> initMethod) throws Exception {
        CommandSlot slot = currentSlot();
        AggregateHolder<T> holder = ownHolder(slot);
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
        EventSourcedAggregate<T> aggregate = EventSourcedAggregate.initialize(
                factoryMethod, model, holder.sink(), repositoryProvider,
                snapshotTriggerDefinition.prepareTrigger(aggregateType)
        );
        initMethod.accept(aggregate);
        String created = aggregate.identifierAsString();
        if (holder.identifier() != null && created != null && !holder.identifier().equals(created)) {
            throw new IllegalStateException(
                    "Command [" + slot.commandName() + "] targets aggregate [" + holder.identifier()
                            + "] but its handler created aggregate [" + created + "]");
        }
        holder.created(aggregate);
        return aggregate;
    }

    @Override
    public Aggregate<T> loadOrCreate(String aggregateIdentifier, Callable<T> factoryMethod) throws Exception {
        EventSourcedAggregate<T> existing = targetOfCurrentCommand(aggregateIdentifier).aggregate();
        if (existing != null) {
            return existing;
        }
        return newInstance(factoryMethod);
    }

    /**
     * Not supported: messages for an aggregate (deadlines) arrive outside the ring, on threads that do not own the
     * aggregate. Always throws.
     */
    @Override
    public void send(Message<?> message, ScopeDescriptor scopeDescription) {
        throw new UnsupportedOperationException(
                "ringbus aggregates of type [" + aggregateType.getName() + "] cannot receive messages outside a "
                        + "command (deadlines are not supported yet)");
    }

    @Override
    public boolean canResolve(ScopeDescriptor scopeDescription) {
        return scopeDescription instanceof AggregateScopeDescriptor
                && Objects.equals(model.type(), ((AggregateScopeDescriptor) scopeDescription).getType());
    }

    private AggregateHolder<T> targetOfCurrentCommand(String aggregateIdentifier) {
        CommandSlot slot = currentSlot();
        AggregateHolder<T> holder = ownHolder(slot);
        if (holder == null || !aggregateIdentifier.equals(holder.identifier())) {
            throw new IllegalStateException(
                    "Command [" + slot.commandName() + "] asked repository of [" + aggregateType.getSimpleName()
                            + "] for aggregate [" + aggregateIdentifier + "], which is not the command's target ("
                            + (holder == null ? "none" : holder.identifier()) + "); ringbus hands a handler only "
                            + "the aggregate its command targets");
        }
        return holder;
    }

    @SuppressWarnings("unchecked")
    private AggregateHolder<T> ownHolder(CommandSlot slot) {
        if (slot.repository() != this) {
            throw new IllegalStateException(
                    "Command [" + slot.commandName() + "] was not routed to aggregate type ["
                            + aggregateType.getSimpleName() + "]; its handler cannot use this repository");
        }
        return (AggregateHolder<T>) slot.holder();
    }

    private CommandSlot currentSlot() {
        if (CurrentUnitOfWork.isStarted()) {
            UnitOfWork<?> unitOfWork = CurrentUnitOfWork.get();
            if (unitOfWork instanceof SlotUnitOfWork) {
                return ((SlotUnitOfWork) unitOfWork).slot();
            }
        }
        throw new IllegalStateException(
                "The ringbus repository of [" + aggregateType.getSimpleName() + "] is used outside a command "
                        + "handled by ringbus");
    }
}
