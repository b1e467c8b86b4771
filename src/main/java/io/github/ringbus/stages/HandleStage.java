package io.github.ringbus.stages;

import io.github.ringbus.aggregates.AggregateHolder;
import io.github.ringbus.events.RingEventStore;
import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandMessage;
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

import java.util.List;

/**
 * Stage 2: runs the command handler, with Axon's handler interceptors, inside the slot's Unit of Work.
 * <p>
 * There is one instance per handler thread, each owning the commands whose segment is its index; commands for one
 * aggregate therefore run on one thread in dispatch order. A handler's failure is recorded in the slot; when the
 * rollback configuration discards its events, the aggregate is restored to its state before the command (see
 * {@link AggregateHolder}) before the thread moves on. A command of an aggregate with a repository of its own
 * (state-stored) runs whole here, Unit of Work and transaction included (see {@link WholeCommandRunner}).
 */
final class HandleStage implements EventHandler<CommandSlot> {

    private final int segment;
    private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> interceptors;
    private final RollbackConfiguration rollbackConfiguration;
    private final RingEventStore splitStore;
    private final CommandBusSpanFactory spanFactory;
    private final boolean timed;
    private final WholeCommandRunner wholeCommands;

    HandleStage(int segment,
                List<MessageHandlerInterceptor<? super CommandMessage<?>>> interceptors,
                RollbackConfiguration rollbackConfiguration,
                RingEventStore splitStore,
                CommandBusSpanFactory spanFactory,
                boolean timed,
                TransactionManager transactionManager) {
        this.segment = segment;
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
        if (slot.segment != segment || slot.preloadFailure != null) {
            return;
        }
        AggregateHolder<?> holder = slot.holder;
        if (holder != null) {
            try {
                slot.generation = holder.beginCommand(slot);
            } catch (Throwable failure) {
                slot.preloadFailure = failure;
                return;
            }
        }
        if (spanFactory == null) {
            handle(slot);
        } else {
            Span span = spanFactory.createHandleCommandSpan(slot.command, false).start();
            try (SpanScope ignored = span.makeCurrent()) {
                handle(slot);
                if (slot.handlerFailure != null) {
                    span.recordException(slot.handlerFailure);
                }
            } finally {
                span.end();
            }
        }
        if (timed) {
            slot.handledNanos = System.nanoTime();
        }
    }

    private void handle(CommandSlot slot) {
        if (slot.runsWhole) {
            wholeCommands.run(slot);
            return;
        }
        SlotUnitOfWork unitOfWork = slot.unitOfWork;
        unitOfWork.startFor(slot.command);
        try {
            MessageHandler<? super CommandMessage<?>> handler =
                    slot.invokeAggregateDirectly ? slot.holder.commandHandler() : slot.handler;
            Object result = interceptors.isEmpty()
                    ? handler.handle(unitOfWork.getMessage())
                    : new DefaultInterceptorChain<>(unitOfWork, interceptors, handler).proceed();
            slot.result = result;
            unitOfWork.recordResult(result);
        } catch (Throwable failure) {
            slot.handlerFailure = failure;
            if (rollbackConfiguration.rollBackOn(failure)) {
                rollBack(slot, failure);
                return;
            }
            unitOfWork.recordResult(failure);
        }
        try {
            unitOfWork.prepareCommit();
            prepareEventsForStore(slot);
        } catch (Throwable failure) {
            // A prepare-commit handler vetoed the command, or an event dispatch interceptor or the serializer
            // failed on its events: it fails like a handler that threw, before anything reaches the store.
            slot.handlerFailure = failure;
            rollBack(slot, failure);
            return;
        }
        succeeded(slot);
    }

    /**
     * Runs the event dispatch interceptors over the command's events, as {@code publish} would, and serializes them
     * for the storage engine here rather than on the store stage's single thread (see
     * {@link RingEventStore#serializeAhead}).
     */
    private void prepareEventsForStore(CommandSlot slot) {
        if (splitStore == null || slot.holder == null || slot.events.isEmpty()) {
            return;
        }
        if (splitStore.hasDispatchInterceptors()) {
            intercept(slot);
        }
        splitStore.serializeAhead(slot.events);
    }

    private void succeeded(CommandSlot slot) {
        AggregateHolder<?> holder = slot.holder; // set by the repository for a creation without target
        if (holder != null) {
            holder.commandSucceeded(slot.events);
        }
        slot.unitOfWork.pause();
    }

    private void intercept(CommandSlot slot) {
        List<? extends EventMessage<?>> intercepted = splitStore.interceptStaged(slot.events);
        slot.events.clear();
        for (EventMessage<?> event : intercepted) {
            slot.events.add((DomainEventMessage<?>) event);
        }
    }

    private void rollBack(CommandSlot slot, Throwable failure) {
        slot.rolledBack = true;
        AggregateHolder<?> holder = slot.holder;
        try {
            if (holder != null) {
                holder.commandRolledBack(slot.events);
            }
        } catch (Throwable restoreFailure) {
            failure.addSuppressed(restoreFailure);
            holder.invalidate(slot.generation);
        } finally {
            slot.events.clear();
            try {
                slot.unitOfWork.rollback(failure);
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
        }
    }
}
