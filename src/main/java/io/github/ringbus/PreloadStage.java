package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.IdentifierMissingException;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;
import com.lmax.disruptor.EventHandler;

/**
 * Stage 1: finds each command's handler and target aggregate, puts the aggregate in memory (from the cache, or read
 * from the event store on a miss) and assigns the command to the handle-stage thread that owns the aggregate.
 * <p>
 * One thread, in ring order; it is the only thread that reads or writes the aggregate caches. A command for which
 * no handler, no target or no aggregate is found carries that failure to completion and is not handled.
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
    private final ClassValue<Boolean> instanceCommandHandlers = new ClassValue<>() {
        @Override
        protected Boolean computeValue(Class<?> type) {
            return AxonInternals.isInstanceCommandHandler(type);
        }
    };

    PreloadStage(CommandRoutes routes, int handlerThreads, boolean timed) {
        this.routes = routes;
        this.handlerThreads = handlerThreads;
        this.timed = timed;
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        try {
            preload(slot, sequence);
        } catch (Throwable failure) {
            slot.failureBeforeHandler = failure;
        }
        if (timed) {
            slot.preloadedNanos = System.nanoTime();
        }
    }

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
            if (ownRepository == null) {
                slot.segment = segmentOfSequence(sequence);
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
        AggregateHolder<?> holder = route.repository().preload(
                identifier, route.createsAggregate(), route.createsWithoutRead(), sequence);
        if (holder == null) {
            slot.failureBeforeHandler = new AggregateNotFoundException(
                    identifier, "The aggregate was not found in the event store");
            return;
        }
        slot.holder = holder;
        slot.segment = segmentOf(identifier);
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
