package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.IdentifierMissingException;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;
import com.lmax.disruptor.EventHandler;

import java.util.ArrayList;
import java.util.function.LongFunction;

/**
 * Stage 1: finds each command's handler and target aggregate, puts the aggregate in memory (from the cache, or read
 * from the event store on a miss) and assigns the command to the handle-stage thread that owns the aggregate.
 * <p>
 * One thread, in ring order; it is the only thread that reads or writes the aggregate caches. A command for which
 * no handler, no target or no aggregate is found carries that failure to completion and is not handled.
 * <p>
 * <b>Reads ahead.</b> When an aggregate is missing from the cache, before reading it the stage looks at the commands
 * of its batch behind this one (at most {@value #LOOK_AHEAD} of them) and starts reading, on the bus's
 * {@link ColdReads} threads, every other missing aggregate they need ({@link PreloadedAggregates#readAhead}); their
 * commands then find the read done or under way. Reads not taken by the end of the batch are dropped. A bus whose
 * aggregates are all cached never looks ahead: the cost is paid on misses only.
 * <p>
 * Tests: {@code PreloadingThreadTest}, {@code behaviour.ReadAheadTest}, {@code CacheEvictionTest}.
 */
final class PreloadStage implements EventHandler<CommandSlot> {

    /**
     * Axon's {@code AggregateAnnotationCommandHandler} subscribes one private handler object per command handler of
     * the aggregate; for an instance command that object resolves the target again, loads the aggregate from the
     * repository and calls its {@code handle}, all of which the preload stage has already done: such commands are
     * invoked on the preloaded aggregate directly (see {@code AggregateHolder.commandHandler()}). Recognised once per
     * handler class ({@link AxonInternals#isInstanceCommandHandler}).
     */
    private final CommandRoutes routes;
    private final int handlerThreads;
    private final boolean timed;
    /** The ring's slots by sequence: the commands behind the one being preloaded, for reads ahead. */
    private final LongFunction<CommandSlot> slots;
    /** Whether missing aggregates are read ahead at all. */
    private final boolean readsAhead;
    /**
     * Whether the event store is read to find which aggregate type a plain handler's command names: where no handler
     * thread owns every aggregate (not {@code COMPACT}), such a command finds its aggregate only if preloaded.
     */
    private final boolean readsNamedAggregateTypes;
    /** Run by a repository before it reads a missing aggregate on this thread (allocated once). */
    private final Runnable lookAhead = this::readAheadOfMiss;
    /** The repositories with reads ahead started in the current batch. */
    private final ArrayList<RingRepository<?>> readingAhead = new ArrayList<>();
    /** The sequence being preloaded, the last of the current batch, and the last whose command was looked at. */
    private long current = -1;
    private long batchEnd = -1;
    private long lookedAheadTo = -1;
    private final ClassValue<Boolean> instanceCommandHandlers = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            return AxonInternals.isInstanceCommandHandler(type);
        }
    };

    /**
     * @param routes         where commands go
     * @param handlerThreads how many handler threads share the aggregates
     * @param timed          whether each slot records when it was preloaded
     * @param slots          the ring's slots by sequence (read only for commands already published)
     * @param readsAhead     whether missing aggregates are read ahead ({@link ColdReads#enabled()})
     * @param readsNamedAggregateTypes whether the store is read for the type of an aggregate a plain handler's command
     *                       names, when no earlier command told ({@link CommandRoutes#repositoryNamedBy})
     */
    PreloadStage(CommandRoutes routes, int handlerThreads, boolean timed, LongFunction<CommandSlot> slots,
                 boolean readsAhead, boolean readsNamedAggregateTypes) {
        this.readsNamedAggregateTypes = readsNamedAggregateTypes;
        this.routes = routes;
        this.handlerThreads = handlerThreads;
        this.timed = timed;
        this.slots = slots;
        this.readsAhead = readsAhead;
    }

    /** The batch's slots are published up to {@code current + batchSize}: the commands a look-ahead may read. */
    @Override
    public void onBatchStart(long batchSize, long queueDepth) {
        batchEnd = current + batchSize;
        dropReadsAhead(); // none left by an earlier batch; cheap when empty
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        current = sequence;
        try {
            preload(slot, sequence);
        } catch (Throwable failure) {
            slot.failureBeforeHandler = failure;
        } finally {
            if (endOfBatch) {
                dropReadsAhead();
            }
        }
        if (timed) {
            slot.preloadedNanos = System.nanoTime();
        }
    }

    /**
     * A miss at {@link #current}: starts reading the missing aggregates of the batch's next commands, from the first
     * not looked at yet, at most {@value #LOOK_AHEAD} behind this one. Resolving their targets runs user code (the
     * target resolver) a second time; whatever it throws only means no read ahead for that command, which meets the
     * failure again when it is preloaded itself.
     */
    private void readAheadOfMiss() {
        if (!readsAhead) {
            return;
        }
        long to = Math.min(batchEnd, current + LOOK_AHEAD);
        for (long sequence = Math.max(current, lookedAheadTo) + 1; sequence <= to; sequence++) {
            try {
                readAheadFor(slots.apply(sequence).command);
            } catch (Throwable noReadAhead) {
                // Left to the command's own preload.
            }
        }
        lookedAheadTo = Math.max(lookedAheadTo, to);
    }

    private void readAheadFor(CommandMessage<?> command) {
        String commandName = command.getCommandName();
        CommandRoutes.AggregateRoute route = routes.aggregateRouteFor(commandName);
        if (route == null || route.createsWithoutRead() || routes.handlerFor(commandName) == null) {
            return;
        }
        CommandTargetResolver targetResolver = route.repository().targetResolver();
        String identifier = route.createsAggregate()
                ? targetOrNull(targetResolver, command)
                : targetResolver.resolveTarget(command).getIdentifier();
        if (identifier != null && route.repository().preloaded().readAhead(identifier)
                && !readingAhead.contains(route.repository())) {
            readingAhead.add(route.repository());
        }
    }

    private void dropReadsAhead() {
        for (int i = 0; i < readingAhead.size(); i++) {
            readingAhead.get(i).preloaded().discardReadsAhead();
        }
        readingAhead.clear();
    }

    /** How far behind a missing aggregate's command the preload stage looks for more to read ahead. */
    static final int LOOK_AHEAD = 256;

    private void preload(CommandSlot slot, long sequence) throws Exception {
        CommandMessage<?> command = slot.command;
        String commandName = command.getCommandName();
        MessageHandler<? super CommandMessage<?>> handler = routes.handlerFor(commandName);
        if (handler == null) {
            slot.failureBeforeHandler = CommandRoutes.noHandlerFor(commandName);
            return;
        }
        slot.handler = handler;
        CommandRoutes.AggregateRoute route = routes.aggregateRouteFor(commandName);
        if (route == null) {
            OwnRepositoryRoute ownRepository = routes.ownRepositoryRouteFor(commandName);
            if (ownRepository == null && routes.runsInItsOwnTransaction(commandName)) {
                routeTransactional(slot, sequence);
            } else if (ownRepository == null) {
                preloadNamedAggregate(slot, commandName, sequence);
            } else {
                routeOwnRepository(slot, ownRepository, sequence);
            }
            return;
        }
        slot.repository = route.repository();
        CommandTargetResolver targetResolver = route.repository().targetResolver();
        String identifier;
        if (route.createsAggregate()) {
            identifier = targetOrNull(targetResolver, command);
        } else {
            VersionedAggregateIdentifier target = targetResolver.resolveTarget(command);
            identifier = target.getIdentifier();
            slot.expectedVersion = target.getVersion();
            slot.invokeAggregateDirectly = instanceCommandHandlers.get(handler.getClass());
        }
        if (identifier == null) {
            // A creation command that names no target: any handler thread may create it.
            slot.segment = segmentOfSequence(sequence);
            return;
        }
        AggregateHolder<?> holder = route.repository().preloaded().preload(
                identifier, route.createsAggregate(), route.createsWithoutRead(), sequence, lookAhead);
        if (holder == null) {
            slot.failureBeforeHandler = new AggregateNotFoundException(
                    identifier, "The aggregate was not found in the event store");
            return;
        }
        slot.holder = holder;
        slot.segment = segmentOf(identifier);
    }

    /**
     * A plain handler's command (an external command handler, in Axon's words: a component whose handler loads an
     * aggregate through its repository) that names an aggregate with {@code @TargetAggregateIdentifier} goes to the
     * handler thread that owns that aggregate, as the aggregate's own commands do, so that it runs in ring order with
     * them; and when it is known which aggregate type that is ({@link CommandRoutes#repositoryNamedBy}), the
     * aggregate is preloaded as its target: its handler's {@code load} finds it there, and its events are stored with
     * the command's, as an aggregate command's are. One that names none goes to any thread (by sequence); on
     * {@code COMPACT}, where one thread owns every aggregate, whatever it loads is lent to it in place
     * ({@link NestedDispatch#lendForLoad}).
     */
    private void preloadNamedAggregate(CommandSlot slot, String commandName, long sequence) throws Exception {
        String identifier = NamedTargets.of(slot.command);
        if (identifier == null) {
            slot.segment = segmentOfSequence(sequence);
            return;
        }
        slot.segment = segmentOf(identifier);
        RingRepository<?> repository = routes.repositoryNamedBy(identifier, readsNamedAggregateTypes);
        if (repository != null) {
            // Null when there is no such aggregate: the handler's load then fails as not found.
            slot.holder = repository.preloaded().preload(identifier, false, false, sequence, lookAhead);
            slot.repository = repository;
        }
    }

    /**
     * The command of an aggregate with a repository of its own (a state-stored one) goes to the handler thread that
     * owns its target identifier, like a ring aggregate's, so that one aggregate's commands run in ring order on one
     * thread; nothing is loaded here (its repository loads it, with its lock, on that thread, where the command then
     * runs whole). A creation command that names no target goes to any thread; an instance command whose target
     * cannot be resolved fails here, as Axon's handler would.
     */
    private void routeOwnRepository(CommandSlot slot, OwnRepositoryRoute route, long sequence) {
        String identifier = route.createsAggregate()
                ? targetOrNull(route.targetResolver(), slot.command)
                : route.targetResolver().resolveTarget(slot.command).getIdentifier();
        slot.segment = identifier == null ? segmentOfSequence(sequence) : segmentOf(identifier);
        slot.runsWhole = true;
    }

    /**
     * A plain handler's command whose handler declares a transaction ({@link TransactionalHandlers}) goes to the
     * handler thread that owns the aggregate it names (any thread when it names none), which runs it whole once every
     * earlier command completed; nothing is preloaded: Axon's repository reads what it loads from the store, in the
     * command's transaction ({@link OutsideRingRepository}).
     */
    private void routeTransactional(CommandSlot slot, long sequence) {
        String identifier = NamedTargets.of(slot.command);
        slot.segment = identifier == null ? segmentOfSequence(sequence) : segmentOf(identifier);
        slot.runsWhole = true;
        slot.afterEarlierCommands = true;
    }

    private static String targetOrNull(CommandTargetResolver targetResolver, CommandMessage<?> command) {
        try {
            return targetResolver.resolveTarget(command).getIdentifier();
        } catch (IdentifierMissingException | IllegalArgumentException e) {
            return null;
        }
    }

    private int segmentOf(String identifier) {
        return CommandSlot.spread(identifier) % handlerThreads;
    }

    private int segmentOfSequence(long sequence) {
        return (int) (sequence % handlerThreads);
    }
}
