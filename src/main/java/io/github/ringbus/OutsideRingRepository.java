package io.github.ringbus;

import org.axonframework.eventsourcing.AggregateFactory;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.RepositoryProvider;
import org.axonframework.modelling.command.inspection.AggregateModel;

/**
 * The part of an aggregate type's repository that serves threads that are not the ring's: a command handled outside
 * the ring (on a {@code SimpleCommandBus} the ring's handlers are subscribed on too:
 * {@link RingCommandBus#subscribeHandlersAlsoOn}), in a Unit of Work of its own, loads and creates aggregates through
 * Axon's own {@link EventSourcingRepository}, from the event store: never from the ring's cache, which only the ring's
 * threads touch. It locks them as Axon's repositories do and stores their events with that Unit of Work; once it has
 * committed, the ring reads its cached aggregates again before their next command ({@link CacheEvictions}), so none
 * of them misses those events.
 * <p>
 * <b>Threads.</b> Any thread that is not the ring's ({@link #serves}), and a ring thread running a command whole whose
 * handler declares a transaction ({@link TransactionalHandlers}): once every earlier command completed, it reads
 * from the store like any thread outside the ring, and its commit has the ring read its cached aggregates again. Axon's repository is built on first use, once:
 * the one field is written under this object's lock and read without it (volatile), so that the ring's threads, which
 * never come here, pay nothing.
 *
 * @param <T> the aggregate root type
 * <p>
 * Tests: {@code spring.InjectedSimpleCommandBusTest}, {@code behaviour.DifferentialTest},
 * {@code postgres.TransactionalHandlerTest}, {@code model.ModelDifferentialTest}.
 */
final class OutsideRingRepository<T> {

    private final Class<T> aggregateType;
    private final AggregateModel<T> model;
    private final AggregateFactory<T> aggregateFactory;
    private final EventStore eventStore;
    private final RepositoryProvider repositoryProvider;
    private final SnapshotTriggerDefinition snapshotTriggerDefinition;
    /** The bus's requests to read its cached aggregates from the store again. */
    private final CacheEvictions evictions;
    /** Axon's repository of this type; built on first use (written under the lock, by whichever thread comes first). */
    private volatile EventSourcingRepository<T> repository;

    OutsideRingRepository(AggregateModel<T> model, AggregateFactory<T> aggregateFactory, EventStore eventStore,
                          RepositoryProvider repositoryProvider, SnapshotTriggerDefinition snapshotTriggerDefinition,
                          CacheEvictions evictions) {
        this.aggregateType = aggregateFactory.getAggregateType();
        this.model = model;
        this.aggregateFactory = aggregateFactory;
        this.eventStore = eventStore;
        this.repositoryProvider = repositoryProvider;
        this.snapshotTriggerDefinition = snapshotTriggerDefinition;
        this.evictions = evictions;
    }

    /** The resource by which a Unit of Work on a ring thread asks to be served here ({@link #serveOnThisThread}). */
    private static final String SERVED_ON_RING_THREAD = OutsideRingRepository.class.getName() + ".served";

    /**
     * True for a command the aggregate handles outside the ring: on a thread that is not the ring's, in a Unit of Work
     * that is not a ring slot's; or on a ring thread, in a Unit of Work that asked for it ({@link #serveOnThisThread}).
     */
    static boolean serves() {
        if (PipelineThreads.isPipelineThread()) {
            return CurrentUnitOfWork.isStarted()
                    && CurrentUnitOfWork.get().root().resources().containsKey(SERVED_ON_RING_THREAD);
        }
        return !CurrentUnitOfWork.isStarted() || !(CurrentUnitOfWork.get().root() instanceof SlotUnitOfWork);
    }

    /**
     * Has this class serve the loads of a Unit of Work that runs a command whole on a ring thread, from the store, in
     * that Unit of Work ({@link WholeCommandRunner}): a command whose handler declares a transaction, run once every
     * earlier command completed, so that the store holds all the ring stored before it.
     */
    static void serveOnThisThread(org.axonframework.messaging.unitofwork.UnitOfWork<?> unitOfWork) {
        unitOfWork.resources().put(SERVED_ON_RING_THREAD, Boolean.TRUE);
    }

    /**
     * @return Axon's repository of this aggregate type, reading from the event store; the current Unit of Work, if
     *         any, has the ring read its cached aggregates again once it committed (off the ring's threads; on a
     *         ring thread, only those it loaded or created: {@link #served})
     */
    Repository<T> repository() {
        EventSourcingRepository<T> built = repository;
        if (built == null) {
            synchronized (this) {
                built = repository;
                if (built == null) {
                    EventSourcingRepository.Builder<T> builder = EventSourcingRepository.builder(aggregateType)
                            .aggregateModel(model)
                            .aggregateFactory(aggregateFactory)
                            .eventStore(eventStore)
                            .snapshotTriggerDefinition(snapshotTriggerDefinition);
                    if (repositoryProvider != null) {
                        builder.repositoryProvider(repositoryProvider);
                    }
                    built = builder.build();
                    repository = built;
                }
            }
        }
        if (CurrentUnitOfWork.isStarted() && !PipelineThreads.isPipelineThread()) {
            // Off the ring's threads: which aggregates the command changed is not followed (a coarse eviction).
            CurrentUnitOfWork.get().afterCommit(unitOfWork -> evictions.request());
        }
        return built;
    }

    /**
     * On a ring thread (a command run whole: {@link #serveOnThisThread}), has the ring read the aggregate the
     * repository loaded or created again from the store once the Unit of Work committed, before its next command:
     * the only one of the ring's aggregates whose events the command stored (a named eviction,
     * {@link CacheEvictions#request(Object, String)}), while every other stays cached.
     *
     * @return the aggregate
     */
    org.axonframework.modelling.command.Aggregate<T> served(org.axonframework.modelling.command.Aggregate<T> aggregate) {
        if (PipelineThreads.isPipelineThread() && CurrentUnitOfWork.isStarted()) {
            CurrentUnitOfWork.get().afterCommit(unitOfWork -> {
                String identifier = aggregate.identifierAsString();
                if (identifier == null) {
                    evictions.request();
                } else {
                    evictions.request(aggregateType, identifier);
                }
            });
        }
        return aggregate;
    }
}
