package io.github.ringbus;

import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandResultMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.messaging.GenericResultMessage;
import org.axonframework.messaging.Message;
import org.axonframework.messaging.ResultMessage;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.tracing.Span;
import org.axonframework.tracing.SpanScope;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.messaging.DefaultInterceptorChain;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import com.lmax.disruptor.EventHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.List;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * Stage 2: runs the command handler, with Axon's handler interceptors, inside the slot's Unit of Work.
 * <p>
 * There is one instance per handler thread, each owning the commands whose segment is its index; commands for one
 * aggregate therefore run on one thread in dispatch order. A handler's failure is recorded in the slot; when the
 * rollback configuration discards its events, the aggregate is restored to its state before the command (see
 * {@link AggregateHolder}) before the thread moves on. A command of an aggregate with a repository of its own
 * (state-stored) runs whole here, Unit of Work and transaction included (see {@link WholeCommandRunner}).
 * <p>
 * Tests: {@code CommandHandlingTest}, {@code behaviour.UnitOfWorkTest}, {@code behaviour.SlotProtocolTest},
 * {@code behaviour.HandlerPublishedEventsTest}, {@code behaviour.InterruptTest},
 * {@code behaviour.RefusedAppendNeighboursTest}.
 */
final class HandleStage implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(HandleStage.class);

    private final int segment;
    private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> interceptors;
    private final RollbackConfiguration rollbackConfiguration;
    private final RingEventStore splitStore;
    private final CommandBusSpanFactory spanFactory;
    private final boolean timed;
    private final WholeCommandRunner wholeCommands;
    /** The number of store shards, to tell each slot which store thread takes it on ({@link CommandSlot#storeShard}). */
    private final int storeShards;
    /** Which commands may run again (the bus's one policy): a re-run skips the others. */
    private final StoreRecovery recovery;
    /** Where store threads ask this thread to run commands again ({@link ReRuns}). */
    private final ReRuns reRuns;
    /**
     * This thread's aggregates whose events were on their way to the store after a command, in the order of their
     * commands: between batches the oldest drop their stored events ({@link #dropStoredEvents}), so that a cached
     * aggregate does not keep its last command's events in memory until its next command (about as much again as the
     * aggregate, measured: docs/benchmarks.md). An aggregate may stand in it once per command in flight; the deque grows to the most in
     * flight once and then allocates nothing. This thread only.
     */
    private final ArrayDeque<AggregateHolder<?>> awaitingStore = new ArrayDeque<>(64);
    /** How far every stage has completed the ring's commands (the complete stages' lowest sequence); any thread. */
    private final java.util.function.LongSupplier completedSequence;
    /**
     * This thread's processor's sequence (the Disruptor's), which it otherwise moves only at the end of a batch: set
     * to {@link #lastPassed} before a wait for the earlier commands, which cannot be stored before the stages after
     * this one see that this thread passed them. This thread only.
     */
    private com.lmax.disruptor.Sequence progress;
    /** The sequence of the last slot this thread passed (its own or not); -1 before the first. */
    private long lastPassed = -1;

    HandleStage(int segment, int storeShards,
                List<MessageHandlerInterceptor<? super CommandMessage<?>>> interceptors,
                RollbackConfiguration rollbackConfiguration,
                RingEventStore splitStore,
                CommandBusSpanFactory spanFactory,
                boolean timed,
                TransactionManager transactionManager,
                StoreRecovery recovery,
                ReRuns reRuns,
                java.util.function.LongSupplier completedSequence) {
        this.segment = segment;
        this.completedSequence = completedSequence;
        this.recovery = recovery;
        this.reRuns = reRuns;
        this.storeShards = storeShards;
        this.interceptors = interceptors;
        this.rollbackConfiguration = rollbackConfiguration;
        this.splitStore = splitStore;
        this.spanFactory = spanFactory;
        this.timed = timed;
        this.wholeCommands =
                new WholeCommandRunner(interceptors, rollbackConfiguration, transactionManager);
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        if (slot.segment != segment) {
            lastPassed = sequence;
            return;
        }
        try {
            handleOwn(slot);
        } finally {
            // After the handler: a creation command that named no target knows its aggregate only now.
            slot.storeShard = slot.storeShardOf(storeShards);
            lastPassed = sequence;
        }
    }

    /**
     * Between two batches: runs again what a store thread asked for (nearly always nothing: one queue read), and lets
     * go of the stored events of this thread's aggregates.
     */
    @Override
    public void onBatchStart(long batchSize, long queueDepth) {
        serveReRuns();
        dropStoredEvents(2 * batchSize + 16);
    }

    @Override
    public void setSequenceCallback(com.lmax.disruptor.Sequence sequenceCallback) {
        this.progress = sequenceCallback;
    }

    /** Woken from its wait by a store thread's request ({@link ReRunBarrier}). */
    @Override
    public void onTimeout(long sequence) {
        serveReRuns();
        dropStoredEvents(64);
    }

    /**
     * Looks at up to {@code budget} of the aggregates in {@link #awaitingStore}, oldest command first: each drops its
     * stored events, and one whose events are still on their way goes to the back, so that one slow store (another
     * shard's, say) holds none of the others. A budget of about twice the batch keeps the work per command constant
     * however many commands are in flight.
     */
    private void dropStoredEvents(long budget) {
        for (long looked = Math.min(budget, awaitingStore.size()); looked > 0; looked--) {
            AggregateHolder<?> holder = awaitingStore.pollFirst();
            if (holder.dropStoredEvents()) {
                awaitingStore.addLast(holder);
            }
        }
    }

    /**
     * Before a command that runs whole in its own transaction and reads what it loads from the store
     * ({@link TransactionalHandlers}): waits until every earlier command of the ring completed (stored, or failed),
     * so that the store holds what they stored, as on {@code SimpleCommandBus}, which handles a command only once
     * the one before it committed. Serves the store threads' requests for re-runs meanwhile (they may be what an
     * earlier command waits for), before this command's Unit of Work begins. No earlier command waits for this
     * thread otherwise: each passed its handler already.
     *
     * @return false when the bus stops first
     */
    private boolean awaitEarlierCommands() {
        long earlier = lastPassed;
        if (progress != null && progress.get() < earlier) {
            // The slots up to here are done with on this thread: let the next stages take them now, not at the
            // batch's end, which comes only after this command.
            progress.set(earlier);
        }
        int attempt = 0;
        while (completedSequence.getAsLong() < earlier) {
            if (reRuns.stopping()) {
                return false;
            }
            serveReRuns();
            dropStoredEvents(64);
            CATCHING_UP.idle(attempt++);
        }
        return true;
    }

    /** A wait for the earlier commands' store: a commit's time, so pauses from 10 µs to 1 ms. */
    private static final Backoff CATCHING_UP = new Backoff(10_000, 1_000_000);

    private void serveReRuns() {
        ReRunBarrier<ReRuns.Request> barrier = reRuns.barrier(segment);
        ReRuns.Request request;
        while (barrier != null && (request = barrier.poll()) != null) {
            if (!request.start()) {
                continue; // cancelled: the bus stops
            }
            boolean ranAgain = false;
            try {
                ranAgain = reRun(request.holder, request.from);
            } catch (Throwable failure) {
                // Not the store's read (reRun handles that): the store thread fails the command as before.
                logger.warn("Could not run again the commands of aggregate [{}] built on events the store refused",
                            request.holder.identifier(), failure);
            } finally {
                request.finish(ranAgain);
            }
        }
    }

    /**
     * Reads the aggregate from the store (which holds every command of it before {@code from} that will ever be
     * stored) and handles again, in ring order, each of its commands from {@code from} to the last slot this thread
     * passed, in its own slot, in a new generation. One that may not be run again ({@link StoreRecovery#mayRunAgain})
     * keeps its old generation, given up here, so that the store fails it; the later ones run without it. When the
     * aggregate as stored cannot be read, each of them fails as its load would on {@code SimpleCommandBus}, after the
     * handler interceptors, and the next command reads the store again ({@code DifferentialTest.
     * aCommandOnAStaleCopyWhoseStoredAggregateCannotBeReadFailsAsItsLoadDoes}).
     */
    private boolean reRun(AggregateHolder<?> holder, long from) {
        Throwable unread = null;
        int unreadGeneration = 0;
        try {
            holder.restartFromStore();
        } catch (Exception readFailure) {
            // The aggregate as stored cannot be read (another writer appended an event the serializer cannot read
            // back, say): each command is handled again as SimpleCommandBus would, its load failing so.
            unread = readFailure;
            unreadGeneration = holder.restartUnread();
        }
        for (long sequence = from; sequence <= lastPassed; sequence++) {
            CommandSlot slot = reRuns.slot(sequence);
            if (slot.segment != segment || slot.holder != holder || !recovery.mayRunAgain(StoreRecovery.Command.of(slot))) {
                continue;
            }
            if (slot.failureBeforeHandler != null) {
                continue; // never reached its handler: nothing of it depends on the aggregate's state
            }
            slot.prepareReRun(ReRuns.discardedRun(slot, holder));
            if (unread != null) {
                // Built on the new generation, failing before its handler: after the handler interceptors.
                slot.ledger.ranOn(unreadGeneration);
                slot.failBeforeHandler(unread);
            }
            handleOwn(slot);
            slot.storeShard = slot.storeShardOf(storeShards);
        }
        return true;
    }

    private void handleOwn(CommandSlot slot) {
        MessageHandler<? super CommandMessage<?>> handler;
        if (slot.failureBeforeHandler != null) {
            if (!interceptedDespite(slot.failureBeforeHandler, slot)) {
                return;
            }
            // On Axon's buses the handler interceptors run before the handler finds that its target is missing (or
            // cannot be read): they may answer the command themselves, or see the failure.
            handler = failingWith(slot.takeFailureBeforeHandler());
        } else {
            AggregateHolder<?> holder = slot.holder;
            Throwable unreadable = null;
            if (holder != null) {
                try {
                    slot.ledger.ranOn(holder.beginCommand(slot));
                } catch (Throwable failure) {
                    // The aggregate had to be read from the store again, and the read failed (an event the
                    // serializer cannot read back, an unreachable database). On SimpleCommandBus that is the
                    // handler's load failing, after the handler interceptors, which may answer the command
                    // themselves (DifferentialTest.aCommandWhoseAggregateCannotBeReadAgainPassesTheHandler
                    // InterceptorsFirst).
                    // The holder is not bound to the command and keeps what it knows (its next command reads the
                    // store again): the outcome, whatever the interceptors make of it, records nothing on it.
                    if (interceptedDespite(failure, slot)) {
                        handleAndTime(slot, failingWith(failure), false);
                    } else {
                        slot.failBeforeHandler(failure);
                    }
                    return;
                }
                try {
                    holder.failIfUnreadable();
                } catch (Throwable failure) {
                    // Its load fails as on SimpleCommandBus, after the handler interceptors; built on this state.
                    unreadable = failure;
                }
            }
            handler = unreadable != null ? failingWith(unreadable)
                    : slot.invokeAggregateDirectly ? holder.commandHandler() : slot.handler;
        }
        handleAndTime(slot, handler, true);
    }

    /**
     * @param onItsHolder false when the command's holder could not be prepared for it ({@link
     *                    AggregateHolder#beginCommand} failed): then neither its failure rolls the holder back nor its
     *                    success records anything on it, and the slot keeps the holder for the later stages; true
     *                    otherwise, for the holder in the slot after the handler (a creation without target gets its
     *                    holder from its handler's repository)
     */
    private void handleAndTime(CommandSlot slot, MessageHandler<? super CommandMessage<?>> handler,
                               boolean onItsHolder) {
        if (spanFactory == null || slot.carriesDelivery()) {
            handle(slot, handler, onItsHolder);
        } else {
            handleTraced(slot, handler, onItsHolder);
        }
        if (timed) {
            slot.handledNanos = System.nanoTime();
        }
    }

    /**
     * Handles the command inside a handle span. A span that cannot be created fails the command before its handler
     * runs, as on Axon's buses; once the handler ran, a span that throws is logged and the command's outcome stands
     * (failing it then would leave its aggregate ahead of the store).
     */
    private void handleTraced(CommandSlot slot, MessageHandler<? super CommandMessage<?>> handler,
                              boolean onItsHolder) {
        Span span;
        SpanScope scope;
        try {
            span = spanFactory.createHandleCommandSpan(slot.command, false).start();
            scope = span.makeCurrent();
        } catch (RuntimeException | Error tracingFailure) {
            // As on Axon's buses, where the handle span wraps the handler: the command is not handled. Nothing ran,
            // so nothing is to be undone.
            slot.handlerFailure = tracingFailure;
            slot.rolledBack = true;
            if (onItsHolder && slot.holder != null) {
                try {
                    slot.holder.commandRolledBack(slot.events); // unbinds the slot; no event was applied
                } catch (Exception restoreFailure) {
                    tracingFailure.addSuppressed(restoreFailure);
                }
            }
            return;
        }
        try {
            handle(slot, handler, onItsHolder);
            if (slot.handlerFailure != null) {
                span.recordException(slot.handlerFailure);
            }
        } catch (RuntimeException | Error tracingFailure) {
            logger.warn("Tracing failed on command [{}]", slot.commandName(), tracingFailure);
        } finally {
            try {
                scope.close();
                span.end();
            } catch (RuntimeException | Error tracingFailure) {
                logger.warn("Tracing failed to end the handle span of command [{}]", slot.commandName(),
                            tracingFailure);
            }
        }
    }

    /**
     * Whether a command that failed before its handler still passes the handler interceptors, as on Axon's buses:
     * when interceptors are registered and a handler was found (a missing handler is refused before the interceptors
     * on Axon's buses too); never for a message delivered outside a command.
     */
    private boolean interceptedDespite(Throwable failureBeforeHandler, CommandSlot slot) {
        return !interceptors.isEmpty() && slot.handler != null && !slot.carriesDelivery()
                && !(failureBeforeHandler instanceof NoHandlerForCommandException);
    }

    /** A handler that fails with what the preload stage found; allocated only on that failure's path. */
    private static MessageHandler<CommandMessage<?>> failingWith(Throwable failure) {
        return command -> {
            if (failure instanceof Exception exception) {
                throw exception;
            }
            throw (Error) failure;
        };
    }

    private void handle(CommandSlot slot, MessageHandler<? super CommandMessage<?>> handler,
                        boolean onItsHolder) {
        if (slot.runsWhole) {
            if (slot.afterEarlierCommands && !awaitEarlierCommands()) {
                slot.handlerFailure = new ShutdownInProgressException(
                        "The bus shut down before the commands ahead of [" + slot.commandName() + "] completed; its "
                                + "handler declares a transaction and runs only after them: it did not run");
                slot.rolledBack = true;
                return;
            }
            wholeCommands.run(slot, slot.afterEarlierCommands);
            return;
        }
        SlotUnitOfWork unitOfWork = slot.unitOfWork;
        unitOfWork.startFor(slot.command);
        try {
            // A message delivered to an aggregate outside a command (a deadline) is no command: the ring's command
            // handler interceptors do not see it (the deadline manager ran its own).
            Object result = interceptors.isEmpty() || slot.carriesDelivery()
                    ? handler.handle(unitOfWork.getMessage())
                    : new DefaultInterceptorChain<>(unitOfWork, interceptors, handler).proceed();
            // Built here, while the Unit of Work is current, so that it carries its correlation data.
            slot.result = resultMessage(result);
            // The Unit of Work's result is the caller's result message, as on SimpleCommandBus (whose callback's
            // message decorates the Unit of Work's): one message, one identifier, not two.
            unitOfWork.recordResult(slot.result);
        } catch (Throwable failure) {
            slot.handlerFailure = failure;
            slot.result = asCommandResultMessage(failure);
            // A delivered message's events are discarded on any failure, as in the deadline manager's Unit of Work.
            if (rollbackConfiguration.rollBackOn(failure) || slot.carriesDelivery()) {
                rollBack(slot, failure, onItsHolder);
                return;
            }
            unitOfWork.recordResult(slot.result);
        }
        try {
            unitOfWork.prepareCommit();
            prepareEventsForStore(slot);
            // The handler thread is done with the command: Axon's Unit of Work timeout covers what it ran, and must
            // not fire on it while the command waits for its batch's store. Only a handler interceptor starts one.
            if (!interceptors.isEmpty()) {
                AxonInternals.endTimeLimit(unitOfWork);
            }
        } catch (Throwable failure) {
            // A prepare-commit handler vetoed the command, or an event dispatch interceptor or the serializer
            // failed on its events: it fails like a handler that threw, before anything reaches the store.
            slot.handlerFailure = failure;
            slot.result = null; // as on Axon's buses, a failed commit's result is built without the Unit of Work
            rollBack(slot, failure, onItsHolder);
            return;
        }
        succeeded(slot, onItsHolder);
    }

    /**
     * The handler's result as the message its caller gets, by the rules of Axon's {@code DefaultUnitOfWork} and
     * {@code GenericCommandResultMessage.asCommandResultMessage}: a result message is returned as it is (a command
     * result message) or wrapped; another message becomes the payload of the result, its metadata the result's;
     * anything else is the payload.
     */
    private static CommandResultMessage<?> resultMessage(Object result) {
        if (result instanceof ResultMessage<?> resultMessage) {
            return asCommandResultMessage(resultMessage);
        }
        if (result instanceof Message<?> message) {
            return asCommandResultMessage(new GenericResultMessage<>(message, message.getMetaData()));
        }
        return new GenericCommandResultMessage<>(result);
    }

    /**
     * Runs the event dispatch interceptors over the command's events (those its aggregate applied and those its
     * handler published on the event store), as {@code publish} would, and serializes them for the storage engine
     * here rather than on the store stage's single thread (see {@link RingEventStore#serializeAhead}).
     */
    private void prepareEventsForStore(CommandSlot slot) {
        if (splitStore == null || slot.events.isEmpty()) {
            return;
        }
        if (splitStore.hasDispatchInterceptors()) {
            intercept(slot);
        }
        splitStore.serializeAhead(slot.events);
        readBack(slot);
    }

    /**
     * Reads back each of the command's domain events in the form the store will give it back, as the next load of
     * its aggregate would on {@code SimpleCommandBus} (which reads the aggregate's events at every command): an event
     * the serializer writes but cannot read (a type it cannot build, or a value its creator refuses) leaves the
     * command as it is (it is stored, as there), and its aggregate fails every later command as that load would
     * ({@link AggregateHolder#cannotBeReadBack}), in ring order, before anything else is handled on it. Here rather
     * than on the store thread after the commit, where the commands handled on the cached aggregate in the meantime
     * would already have been acknowledged. Allocates the stored forms and the read objects: the deserialization is
     * the check; only on engines that serialize (JDBC, JPA).
     */
    private void readBack(CommandSlot slot) {
        List<EventMessage<?>> events = slot.events;
        for (int i = 0; i < events.size(); i++) {
            if (!(events.get(i) instanceof DomainEventMessage<?> event)) {
                continue;
            }
            DomainEventMessage<?> asStored = splitStore.asStored(event);
            if (asStored == null) {
                return;
            }
            try {
                asStored.getPayload();
                asStored.getMetaData();
            } catch (RuntimeException | LinkageError unreadable) {
                AggregateHolder<?> holder = ownerOf(slot, event);
                logger.error("Events of type [{}] are written but serializer [{}] cannot read them back: {}. Command "
                                     + "[{}] applied one on aggregate [{}] (sequence {}); it is stored, as on "
                                     + "SimpleCommandBus, and every later command of the aggregate fails reading it, "
                                     + "as there, until the serializer configured for events can read it (with "
                                     + "Spring Boot, axon.serializer.events=jackson is the usual fix)",
                             event.getPayloadType().getName(), splitStore.eventSerializerName(), unreadable,
                             slot.commandName(), event.getAggregateIdentifier(), event.getSequenceNumber(),
                             unreadable);
                if (holder != null) {
                    holder.cannotBeReadBack(asStored);
                }
            }
        }
    }

    /** The holder of the slot's own aggregate, or of one it borrowed, that the event belongs to; or null. */
    private static AggregateHolder<?> ownerOf(CommandSlot slot, EventMessage<?> event) {
        if (slot.holder != null && slot.holder.owns(event)) {
            return slot.holder;
        }
        AggregateHolder<?>[] owner = {null};
        slot.ledger.forEachBorrowed(borrowed -> {
            if (owner[0] == null && borrowed.owns(event)) {
                owner[0] = borrowed;
            }
        });
        return owner[0];
    }

    private void succeeded(CommandSlot slot, boolean onItsHolder) {
        // For a creation without target, the holder its handler's repository set.
        AggregateHolder<?> holder = onItsHolder ? slot.holder : null;
        if (holder != null) {
            holder.commandSucceeded(slot.events);
            awaitingStore.addLast(holder);
        }
        slot.borrowedSucceeded();
        slot.unitOfWork.pause();
    }

    private void intercept(CommandSlot slot) {
        List<? extends EventMessage<?>> intercepted = splitStore.interceptStaged(slot.events);
        slot.events.clear();
        slot.events.addAll(intercepted);
    }

    private void rollBack(CommandSlot slot, Throwable failure, boolean onItsHolder) {
        slot.rolledBack = true;
        AggregateHolder<?> holder = onItsHolder ? slot.holder : null;
        try {
            if (holder != null) {
                holder.commandRolledBack(slot.events);
            }
        } catch (Throwable restoreFailure) {
            // Not restored: the aggregate's next command reads it again, with the earlier commands' events still on
            // their way to the store (giving the generation up instead would build on a store without them).
            failure.addSuppressed(restoreFailure);
        } finally {
            // Aggregates that commands run in place from this handler changed lose those changes with it.
            slot.borrowedRolledBack(failure);
            slot.events.clear();
            try {
                slot.unitOfWork.rollback(failure);
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
        }
    }
}
