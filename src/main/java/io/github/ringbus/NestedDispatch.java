package io.github.ringbus;

import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.messaging.DefaultInterceptorChain;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.ResultMessage;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.monitoring.MessageMonitor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Future;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * Commands dispatched from one of the ring's own threads (a handler, a subscribing event handler, a function chained
 * onto a {@code FutureCallback} the complete stage completes; an application's callback runs on the callback thread,
 * which is not one of them). Such a command cannot complete through the ring while the dispatching thread waits for
 * it: the store stage waits for every handler thread, and the complete stage for store and publish. So:
 * <ul>
 *     <li><b>In place</b>, at once, on the dispatching thread, in a Unit of Work nested in the current one (as Axon's
 *     SimpleCommandBus runs every command): a command for a plain (non-aggregate) handler, from any pipeline thread;
 *     from a handler thread inside a command, a command for the very aggregate that command targets (this thread
 *     owns it); and, waited for from the one handler thread of {@link Topology#COMPACT} (which owns every aggregate),
 *     a command for an aggregate the command's handler already loaded or changed (it holds it, as Axon's Unit of Work
 *     holds its lock), or an instance or creation command for another aggregate none of whose commands is ahead of
 *     it in the ring. Its
 *     applied events join the current command's, in order, and are stored with them; if the outer command fails,
 *     they are discarded with it. A nested command of the same aggregate that fails after applying events fails the
 *     outer command too (its events cannot be taken back alone); one of another aggregate is taken back alone, with
 *     everything the commands it ran in place did. A command nobody handles fails at once.</li>
 *     <li><b>Refused</b>, at once, through its callback with a {@link PipelineWaitException} and not dispatched: any
 *     other command that is being waited for, i.e. dispatched by {@code CommandGateway.sendAndWait} or with a callback
 *     that is a {@link Future} (Axon's {@code FutureCallback}).</li>
 *     <li>Otherwise it goes into the ring like any command (fire and forget: {@code commandGateway.send}, a
 *     callback).</li>
 * </ul>
 * Only for pipeline threads; never on the dispatch path of other threads.
 * <p>
 * Tests: {@code behaviour.NestedCommandTest}, {@code behaviour.WaitingForAnotherAggregateTest},
 * {@code behaviour.WaitingForAnotherAggregateStressTest}.
 */
final class NestedDispatch {

    private static final StackWalker STACK = StackWalker.getInstance(StackWalker.Option.RETAIN_CLASS_REFERENCE);
    /** How far up the stack a waiting gateway call is looked for: gateway, bus decorators, this bus. */
    private static final int GATEWAY_FRAMES = 64;

    private final CommandRoutes routes;
    private final UnaryOperator<CommandMessage<?>> dispatchInterceptors;
    private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors;
    private final MessageMonitor<? super CommandMessage<?>> messageMonitor;
    private final RollbackConfiguration rollbackConfiguration;
    /** The ring, to see which commands are ahead of a command run in place. */
    private final Pipeline pipeline;
    /** True when the one handler thread also preloads, and so owns every aggregate and the cache ({@code COMPACT}). */
    private final boolean handlerThreadOwnsEveryAggregate;

    /**
     * @param routes                the bus's handlers and aggregate routes
     * @param dispatchInterceptors  applies the bus's dispatch interceptors
     * @param handlerInterceptors   the bus's handler interceptors (live list)
     * @param messageMonitor        the bus's message monitor
     * @param rollbackConfiguration which handler exceptions roll a command back
     * @param pipeline              the ring
     * @param handlerThreadOwnsEveryAggregate true when the one handler thread also preloads ({@code COMPACT})
     */
    NestedDispatch(CommandRoutes routes,
                   UnaryOperator<CommandMessage<?>> dispatchInterceptors,
                   List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors,
                   MessageMonitor<? super CommandMessage<?>> messageMonitor,
                   RollbackConfiguration rollbackConfiguration,
                   Pipeline pipeline,
                   boolean handlerThreadOwnsEveryAggregate) {
        this.routes = routes;
        this.dispatchInterceptors = dispatchInterceptors;
        this.handlerInterceptors = handlerInterceptors;
        this.messageMonitor = messageMonitor;
        this.rollbackConfiguration = rollbackConfiguration;
        this.pipeline = pipeline;
        this.handlerThreadOwnsEveryAggregate = handlerThreadOwnsEveryAggregate;
    }

    /**
     * Handles a command dispatched on a pipeline thread when it must not go into the ring (see the class).
     *
     * @param command  the command, before dispatch interceptors
     * @param callback its callback
     * @return true when the command was handled or refused here (its callback has been called), false when it is to
     * be dispatched into the ring
     */
    boolean dispatchedHere(CommandMessage<?> command, CommandCallback<Object, Object> callback) {
        // A command sent from a handler: that handler's command is never run again, or this one would go out twice.
        RunOnce.markCurrentUnitOfWork();
        String name = command.getCommandName();
        MessageHandler<? super CommandMessage<?>> handler = routes.handlerFor(name);
        if (handler == null || OutsideRingRepository.serves()) {
            // No handler; or sent from a command run whole, in its handler's transaction, once every earlier command
            // completed (TransactionalHandlers): run in place in its Unit of Work, as on SimpleCommandBus, where the
            // ring's repositories read what it loads from the store.
            runInPlace(command, callback, handler, null);
            return true;
        }
        CommandRoutes.AggregateRoute route = routes.aggregateRouteFor(name);
        if (route == null) {
            runInPlace(command, callback, handler, null);
            return true;
        }
        CommandSlot own = slotOfOwnAggregate(route, command);
        if (own != null) {
            runInPlace(command, callback, handler, own);
            return true;
        }
        if (TracedCallback.callersOwn(callback) instanceof Future || insideWaitingGatewayCall()) {
            String notHere = runOnAnotherAggregate(command, callback, handler, route);
            if (notHere != null) {
                callback.onResult(command, asCommandResultMessage(refusal(command, notHere)));
            }
            return true;
        }
        return false;
    }

    /**
     * Runs a waited-for command for another aggregate in place, on the handler thread, inside the command being
     * handled there, as SimpleCommandBus runs a nested command: when this thread owns every aggregate and their
     * cache ({@link Topology#COMPACT}: one handler thread that also preloads), and no command for that aggregate
     * dispatched earlier is still ahead of it in the ring (running this one first would change their order). The
     * command runs on the aggregate's state in the ring (every command of it handled so far), its events join the
     * outer command's, and the aggregate shares the outer command's fate from then on: stored in its transaction,
     * restored if it fails, given up if its events fail to be stored ({@link CommandLedger#borrow}). If the nested
     * command itself fails, its events are discarded and the aggregate restored; the outer command goes on.
     *
     * @return null when the command ran (its callback was called), otherwise why it cannot run here
     */
    private String runOnAnotherAggregate(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                                         MessageHandler<? super CommandMessage<?>> handler,
                                         CommandRoutes.AggregateRoute route) {
        CommandSlot outer = slotHandledOnThisThread();
        if (outer == null) {
            return "it was not sent from the handler of a command whose events ringbus stores (but from a "
                    + "subscribing event handler, a callback, or a state-stored aggregate's handler)";
        }
        RingRepository<?> repository = route.repository();
        String resolved;
        try {
            resolved = repository.targetResolver().resolveTarget(command).getIdentifier();
        } catch (RuntimeException unresolvable) {
            resolved = null; // its handler fails the same way, below
        }
        String target = resolved;
        if (target != null && runOnCreatedAlongside(command, callback, handler, outer, repository, target)) {
            return null;
        }
        if (target != null && runOnBorrowed(command, callback, handler, outer, repository, target)) {
            return null;
        }
        if (!handlerThreadOwnsEveryAggregate) {
            return "with several handler threads (or the FULL topology) another thread owns that aggregate";
        }
        if (target == null) {
            if (route.createsAggregate()) {
                return "it creates an aggregate whose identifier is known only once it exists, which ringbus runs "
                        + "in place only through AggregateLifecycle.createNew";
            }
            // Its handler fails the same way, touching no aggregate: as on SimpleCommandBus.
            runInPlace(command, callback, handler, null);
            return null;
        }
        if (pipeline.anyPublishedAfter(outer.sequence, queued -> mayTarget(queued, repository, target))) {
            return "a command for aggregate [" + target + "] dispatched before it is still in the ring, and running "
                    + "this one first would change their order";
        }
        AggregateHolder<?> holder;
        int generation;
        try {
            // A command that may create its aggregate (constructor, ALWAYS, CREATE_IF_MISSING) gets a holder even
            // when the store has none: its handler creates the aggregate in it (RingRepository#newInstance).
            holder = repository.preloaded().preload(target, route.createsAggregate(), false, outer.sequence, null);
            if (holder == null) {
                throw new AggregateNotFoundException(target, "The aggregate was not found in the event store");
            }
            generation = holder.beginCommand(outer);
            try {
                holder.failIfUnreadable();
            } catch (Exception unreadable) {
                holder.commandRolledBack(List.of()); // nothing applied: unbound again, as it was
                throw unreadable;
            }
        } catch (Exception notReadable) {
            // As on Axon's buses, where the handler finds its aggregate missing (or unreadable) only after the
            // handler interceptors ran: they may answer the command themselves, or see the failure.
            runInPlace(command, callback, failingWith(notReadable), null);
            return null;
        }
        boolean[] settled = {false};
        // The aggregate a command run in place further out runs on (this one may be sent from its handler): it is
        // the target again once this command is done, for that handler's own later calls to the repository.
        AggregateHolder<?> enclosing = outer.ledger.inPlaceTarget();
        outer.ledger.runInPlaceOn(holder);
        try {
            // The aggregate's bookkeeping is done before the callback tells the waiting handler the outcome.
            // Its events and the aggregate's state are taken back by runInPlace when it fails (see takeBack).
            runInPlace(command, callback, handler, null, holder, result -> {
                settled[0] = true;
                outer.ledger.runInPlaceOn(enclosing);
                if (!rolledBack(result)) {
                    outer.ledger.borrow(holder, generation);
                }
            });
        } finally {
            outer.ledger.runInPlaceOn(enclosing);
            if (!settled[0]) {
                // A dispatch interceptor or the message monitor threw around the handler: whatever the command
                // applied is in the outer command's list, so the aggregate shares the outer command's fate.
                outer.ledger.borrow(holder, generation);
            }
        }
        return null;
    }

    /**
     * Runs the command in place when its target is an aggregate the outer command already borrowed (its handler
     * loaded it from the repository, or a command it ran in place changed it) and still holds: the aggregate shares
     * the outer command's fate, its changes are among the outer command's events, ahead of every command of it still
     * in the ring, so the nested command runs on it now, before those, as on {@code SimpleCommandBus}, where the
     * outer command holds the aggregate's lock until it ends. Whatever the cache size or the commands queued behind.
     * If it rolls back, what it did is taken back as for any borrowed aggregate ({@link #takeBack}).
     *
     * @return true when the command ran here (its callback was called)
     */
    private boolean runOnBorrowed(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                                  MessageHandler<? super CommandMessage<?>> handler, CommandSlot outer,
                                  RingRepository<?> repository, String target) {
        AggregateHolder<?> borrowed = outer.ledger.borrowedOf(repository, target);
        if (borrowed == null || !borrowed.lentTo(outer)) {
            return false;
        }
        runInPlaceOnHeld(command, callback, handler, outer, borrowed);
        return true;
    }

    /**
     * Runs the command in place on an aggregate the outer command already holds (created beside its target, or
     * borrowed): that aggregate is the target of its handler's loads while it runs, then the enclosing one again.
     */
    private void runInPlaceOnHeld(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                                  MessageHandler<? super CommandMessage<?>> handler, CommandSlot outer,
                                  AggregateHolder<?> held) {
        AggregateHolder<?> enclosing = outer.ledger.inPlaceTarget();
        outer.ledger.runInPlaceOn(held);
        try {
            runInPlace(command, callback, handler, null, held, result -> outer.ledger.runInPlaceOn(enclosing));
        } finally {
            outer.ledger.runInPlaceOn(enclosing);
        }
    }

    /**
     * Runs the command in place when its target is an aggregate the outer command created beside its own target
     * (an external handler's {@code newInstance}, a {@code createNew}) and has not stored yet: this thread holds the
     * only instance, whatever the topology, no command in the ring can be for it before this one, and it is in no
     * cache. Its events join the outer command's after the creation's, as on {@code SimpleCommandBus}, where the
     * nested command loads the aggregate from the Unit of Work.
     *
     * @return true when the command ran here (its callback was called)
     */
    private boolean runOnCreatedAlongside(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                                          MessageHandler<? super CommandMessage<?>> handler, CommandSlot outer,
                                          RingRepository<?> repository, String target) {
        AggregateHolder<?> created = outer.ledger.createdAlongside(repository, target);
        if (created == null) {
            return false;
        }
        runInPlaceOnHeld(command, callback, handler, outer, created);
        return true;
    }

    /**
     * A handler on this thread asked a ring repository for an aggregate that is neither its command's target nor that
     * of a command run in place around it: an external command handler (a component handed the aggregate's
     * repository) loading an aggregate its command does not name, or an aggregate's handler loading another one, as
     * Axon's repositories allow. Where this thread owns every aggregate and their cache ({@link Topology#COMPACT}),
     * the aggregate is lent to the command as to a command run in place on it: in its state in the ring (every command
     * of it before this one in ring order), its events joining the command's, restored if the command fails, given up
     * if they fail to be stored ({@link CommandLedger#borrow}). A second load of it in the same command gets the same
     * instance, as in Axon's Unit of Work. Elsewhere another thread owns it, and the load fails, saying how to route
     * the command (the preload stage routes a command that names its aggregate with
     * {@code @TargetAggregateIdentifier}: {@code PreloadStage}, which finds its type by {@link
     * CommandRoutes#repositoryNamedBy}).
     *
     * @return the aggregate's holder, lent to the slot's command
     * @throws AggregateNotFoundException when there is no such aggregate
     * @throws IllegalStateException      when this thread does not own the aggregate, or (in a command run in place)
     *                                    a command of it dispatched before is still in the ring
     * @throws Exception                  when the aggregate could not be read
     */
    AggregateHolder<?> lendForLoad(RingRepository<?> repository, String identifier, CommandSlot slot) throws Exception {
        // Never run again, whatever comes of the load: a second run would find this aggregate as the commands after
        // this one in the ring left it (only the command's own aggregate is handled again in ring order: ReRuns).
        RunOnce.markCurrentUnitOfWork();
        UnitOfWork<?> current = CurrentUnitOfWork.get();
        String commandName = ((CommandMessage<?>) current.getMessage()).getCommandName();
        boolean topLevel = current == current.root();
        String aggregate = "aggregate [" + identifier + "] of [" + repository.aggregateType().getSimpleName() + "]";
        if (!handlerThreadOwnsEveryAggregate) {
            if (slot.holder == null && identifier.equals(NamedTargets.of(slot.command))) {
                // The preload stage looked for the aggregate the command names, in every cache and in the store,
                // in ring order: there is none (of any type).
                throw new AggregateNotFoundException(identifier, "The aggregate was not found in the event store");
            }
            throw new IllegalStateException(
                    "The handler of command [" + commandName + "] loads " + aggregate + ", which its command was not "
                            + "routed to: with several handler threads or the FULL topology, another thread owns "
                            + "that aggregate. ringbus routes a command whose handler loads an aggregate to that "
                            + "aggregate's thread, with the aggregate preloaded, when the command names it with "
                            + "@TargetAggregateIdentifier (one aggregate per command); or use the COMPACT topology "
                            + "(one handler thread), where a handler may load any aggregate");
        }
        AggregateHolder<?> holder = repository.preloaded().preload(identifier, false, false, slot.sequence, null);
        if (holder == null) {
            throw new AggregateNotFoundException(identifier, "The aggregate was not found in the event store");
        }
        if (holder.lentTo(slot)) {
            // Loaded before in this command, or changed by a command run in place around this one. An event of it
            // the serializer cannot read back fails this load too, as every load fails on SimpleCommandBus.
            holder.failIfUnreadable();
            return holder;
        }
        if (slot.ledger.isReRun()) {
            // Handled again on its own aggregate as stored, after commands behind it in the ring were handled: this
            // aggregate is as they left it, not as the command's first place in the ring saw it. As a command that
            // may not run twice, it fails as built on given-up state (its first run failed before it loaded this).
            throw new EventStoreException(
                    "Command [" + commandName + "] was handled on top of events that failed to be stored; handled "
                            + "again, its handler loads " + aggregate + ", which the commands after it in the ring "
                            + "may have changed since: it is rejected, and nothing of it is stored");
        }
        if (!topLevel && pipeline.anyPublishedAfter(slot.sequence, queued -> mayTarget(queued, repository,
                                                                                        identifier))) {
            throw new IllegalStateException(
                    "The handler of command [" + commandName + "], run in place inside command ["
                            + slot.commandName() + "], loads " + aggregate + ", but a command for it dispatched "
                            + "before is still in the ring, and loading it now would change their order");
        }
        int generation = holder.beginCommand(slot);
        slot.ledger.borrow(holder, generation);
        holder.failIfUnreadable();
        return holder;
    }

    /**
     * Whether a command already in the ring may be for the given aggregate: it is for that aggregate type and its
     * target is that identifier, or cannot be resolved; or a plain handler's command names that identifier (its
     * handler may load it).
     */
    private boolean mayTarget(CommandMessage<?> queued, RingRepository<?> repository, String target) {
        if (queued == null) {
            return false;
        }
        CommandRoutes.AggregateRoute route = routes.aggregateRouteFor(queued.getCommandName());
        if (route == null) {
            return routes.ownRepositoryRouteFor(queued.getCommandName()) == null
                    && target.equals(NamedTargets.of(queued));
        }
        if (route.repository() != repository) {
            return false;
        }
        try {
            return target.equals(repository.targetResolver().resolveTarget(queued).getIdentifier());
        } catch (RuntimeException unresolvable) {
            return true;
        }
    }

    /** The slot whose command's handler runs on this thread now, or null on any other thread. */
    private static CommandSlot slotHandledOnThisThread() {
        if (!CurrentUnitOfWork.isStarted()) {
            return null;
        }
        UnitOfWork<?> root = CurrentUnitOfWork.get().root();
        if (!(root instanceof SlotUnitOfWork)
                || (root.phase() != UnitOfWork.Phase.STARTED && root.phase() != UnitOfWork.Phase.PREPARE_COMMIT)) {
            return null;
        }
        return (CommandSlot) ((SlotUnitOfWork) root).slot(); // every slot's Unit of Work serves a CommandSlot
    }

    /** A handler that fails with what was found before it; allocated only on that failure's path. */
    private static MessageHandler<CommandMessage<?>> failingWith(Exception failure) {
        return command -> {
            throw failure;
        };
    }

    /**
     * The slot of the command being handled on this thread, if the command targets the same aggregate; else null.
     * The slot's Unit of Work is current and not yet past prepare-commit only on the handler thread handling it.
     */
    private static CommandSlot slotOfOwnAggregate(CommandRoutes.AggregateRoute route, CommandMessage<?> command) {
        CommandSlot slot = slotHandledOnThisThread();
        if (slot == null) {
            return null;
        }
        AggregateHolder<?> holder = slot.holder;
        if (holder == null || holder.identifier() == null || slot.repository != route.repository()) {
            return null;
        }
        try {
            String target = route.repository().targetResolver().resolveTarget(command).getIdentifier();
            return holder.identifier().equals(target) ? slot : null;
        } catch (RuntimeException unresolvable) {
            return null; // no target here: it goes the way of any other aggregate's command
        }
    }

    /** Runs the command now, on this thread, as SimpleCommandBus would; a null handler fails it as not handled. */
    private void runInPlace(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                            MessageHandler<? super CommandMessage<?>> handler, CommandSlot outer) {
        runInPlace(command, callback, handler, outer, null, result -> {
        });
    }

    /**
     * As {@link #runInPlace(CommandMessage, CommandCallback, MessageHandler, CommandSlot)}, giving the command's
     * result to {@code beforeCallback} once the command is done and before its callback is called.
     *
     * @param target the other aggregate this command runs on ({@link #runOnAnotherAggregate}), or null: a plain
     *               handler's command, or one of the root's own aggregate, has none of its own, even when it is sent
     *               from the handler of a command that runs in place on another aggregate (that aggregate belongs to
     *               the enclosing command, which is still running, and is not this command's to give back)
     */
    private void runInPlace(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                            MessageHandler<? super CommandMessage<?>> handler, CommandSlot outer,
                            AggregateHolder<?> target, Consumer<ResultMessage<?>> beforeCallback) {
        CommandMessage<?> intercepted = dispatchInterceptors.apply(command);
        MessageMonitor.MonitorCallback monitor = messageMonitor.onMessageIngested(intercepted);
        ResultMessage<?> result;
        if (handler == null) {
            result = asCommandResultMessage(CommandRoutes.noHandlerFor(intercepted.getCommandName()));
            beforeCallback.accept(result);
        } else {
            // The slot whose Unit of Work is the root of this one: what this command and the commands it runs in
            // place apply or publish joins that slot's events, and must leave them again if this command rolls back.
            CommandSlot root = slotHandledOnThisThread();
            int eventsBefore = root == null ? 0 : root.events.size();
            DefaultUnitOfWork<CommandMessage<?>> unitOfWork = DefaultUnitOfWork.startAndGet(intercepted);
            SlotUnitOfWork.markRunInPlace(unitOfWork);
            result = unitOfWork.executeWithResult(
                    () -> new DefaultInterceptorChain<>(unitOfWork, handlerInterceptors, handler).proceed(),
                    rollbackConfiguration);
            beforeCallback.accept(result);
            if (root != null && rolledBack(result)) {
                takeBack(root, eventsBefore, outer != null, target, intercepted, result.exceptionResult());
            }
        }
        if (result.isExceptional()) {
            monitor.reportFailure(result.exceptionResult());
        } else {
            monitor.reportSuccess();
        }
        callback.onResult(intercepted, asCommandResultMessage(result));
    }

    /** True when the command failed and its Unit of Work rolled back (its events are discarded). */
    private boolean rolledBack(ResultMessage<?> result) {
        return result.isExceptional() && rollbackConfiguration.rollBackOn(result.exceptionResult());
    }

    /**
     * A command run in place rolled back: as in Axon's nested Unit of Work, nothing it did may outlive it, whatever
     * depth it ran at and whatever it ran in place itself. The events added to the root slot since it began (its
     * own, and those of every command it ran in place, on any aggregate, and those it published) leave the slot's
     * list, and each aggregate they changed is rebuilt without them: the store's state, its events on their way
     * there, and its events the slot keeps ({@link AggregateHolder#inPlaceCommandRolledBack}). The exception is the
     * root command's own aggregate, whose instance its handler still holds: when one of those events is its, the
     * root command fails in its prepare-commit phase instead, which discards everything.
     *
     * @param root         the slot whose command is handled on this thread
     * @param eventsBefore the size of its event list when the failed command began
     * @param ownAggregate true when the failed command was for the root command's own aggregate
     * @param target       the other aggregate the failed command ran on, or null
     */
    private static void takeBack(CommandSlot root, int eventsBefore, boolean ownAggregate, AggregateHolder<?> target,
                                 CommandMessage<?> failed, Throwable failure) {
        List<EventMessage<?>> added = root.events.subList(eventsBefore, root.events.size());
        if ((ownAggregate && !added.isEmpty()) || ownsAny(root.holder, added)) {
            failOuterCommand(root, failed, failure);
            return;
        }
        List<EventMessage<?>> discarded = new ArrayList<>(added);
        added.clear();
        if (target != null && !root.ledger.hasBorrowed(target)) {
            // An aggregate the root command created stays bound to it: its creation is among the events kept.
            restore(target, discarded, root, root.ledger.isCreatedAlongside(target), failure);
        }
        root.ledger.forEachBorrowed(holder -> restore(holder, discarded, root, true, failure));
    }

    private static void restore(AggregateHolder<?> holder, List<EventMessage<?>> discarded, CommandSlot root,
                                boolean stillBorrowed, Throwable failure) {
        try {
            holder.inPlaceCommandRolledBack(discarded, root.events, stillBorrowed);
        } catch (Exception restoreFailure) {
            // Not restored: its next command reads it again first (AggregateHolder#beginCommand).
            failure.addSuppressed(restoreFailure);
        }
    }

    private static boolean ownsAny(AggregateHolder<?> holder, List<EventMessage<?>> events) {
        if (holder == null) {
            return false;
        }
        for (int i = 0; i < events.size(); i++) {
            if (holder.owns(events.get(i))) {
                return true;
            }
        }
        return false;
    }

    /**
     * The nested command changed the aggregate and failed: its events cannot be taken back alone, so the outer
     * command fails in its prepare-commit phase (on this thread, before anything is stored) and the aggregate is
     * restored to its state before the outer command, whether or not the outer handler caught the failure.
     */
    private static void failOuterCommand(CommandSlot outer, CommandMessage<?> nested, Throwable failure) {
        String message = "Command [" + outer.commandName() + "] fails because command [" + nested.getCommandName()
                + "], which it sent, failed after events of the same aggregate [" + outer.holder.identifier()
                + "] were applied: " + failure.getMessage();
        outer.unitOfWork.onPrepareCommit(u -> {
            throw new IllegalStateException(message, failure);
        });
    }

    /** True when a {@code CommandGateway.sendAndWait} is on this thread's stack: the caller waits for the result. */
    private static boolean insideWaitingGatewayCall() {
        return STACK.walk(frames -> frames.limit(GATEWAY_FRAMES).anyMatch(
                frame -> frame.getMethodName().equals("sendAndWait")
                        && CommandGateway.class.isAssignableFrom(frame.getDeclaringClass())));
    }

    private static PipelineWaitException refusal(CommandMessage<?> command, String notInPlace) {
        return new PipelineWaitException(
                "Command [" + command.getCommandName() + "] was not dispatched: it was sent from ringbus pipeline "
                        + "thread [" + Thread.currentThread().getName() + "] and waited for (sendAndWait, or a "
                        + "callback that is a Future), but it can only complete after this thread has finished its "
                        + "current work, so waiting would hang the bus, and it cannot run in place: " + notInPlace
                        + ". On a pipeline thread a command can be waited for when it runs in place: a command for a "
                        + "plain (non-aggregate) handler; inside a command handler, a command for the aggregate that "
                        + "command targets; and, on one handler thread (the COMPACT topology), an instance or creation "
                        + "command for another aggregate with none of its commands ahead in the ring. Otherwise send it "
                        + "without waiting (commandGateway.send(...) or a callback), or dispatch it from a thread of "
                        + "your own.");
    }
}
