package io.github.ringbus;

import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitorCallback;
import org.axonframework.tracing.Span;
import org.axonframework.tracing.SpanScope;

import java.util.List;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * The way into the ring for every command a caller dispatches: the dispatch span, the dispatch interceptors, the
 * message monitor, the refusal of a command without handler, the lifecycle's gate ({@link RingLifecycle}), a command
 * sent from a pipeline thread ({@link NestedDispatch}), and the slots ({@link Admission}), in that order, as
 * {@link RingCommandBus#dispatch} and {@link RingCommandBus#dispatchAll} document.
 * <p>
 * Threads: any number of dispatching threads at once; it holds no state of its own beyond the bus's collaborators (the
 * interceptor list is a copy-on-write list the bus registers into).
 * <p>
 * Tests: {@code behaviour.BadInputTest}, {@code behaviour.TracingTest}, {@code behaviour.MonitorTest}.
 */
final class Dispatches {

    private final RingSettings settings;
    private final CommandRoutes routes;
    private final List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors;
    private final RingLifecycle lifecycle;
    private final Admission admission;
    /** How a command sent from a pipeline thread is dispatched. */
    private final NestedDispatch nested;
    /**
     * How a command a store attempt held goes on into the ring once it committed: handed to the callback thread, which
     * may wait for a slot as any caller (the store thread may not: it frees slots itself), in the order the commands
     * were sent, ahead of the callbacks of the commands whose subscribers sent them (made once).
     */
    private final HeldEffects.Admission heldAdmission;
    /** What the callback thread is handed with a held command (it takes a result with every call; this one is none). */
    private static final CommandResultMessage<Object> RELEASED = asCommandResultMessage((Object) null);

    Dispatches(RingSettings settings, CommandRoutes routes,
               List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors,
               RingLifecycle lifecycle, Admission admission, NestedDispatch nested, CallbackThread callbacks) {
        this.settings = settings;
        this.routes = routes;
        this.dispatchInterceptors = dispatchInterceptors;
        this.lifecycle = lifecycle;
        this.admission = admission;
        this.nested = nested;
        this.heldAdmission = (intercepted, callback) -> callbacks.hand(
                (command, none) -> throughTheGate(intercepted, callback, false), intercepted, RELEASED);
    }

    /** See {@link RingCommandBus#dispatch(CommandMessage, CommandCallback)}; arguments checked by the caller. */
    <C, R> void dispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        CommandBusSpanFactory spanFactory = settings.spanFactory();
        if (spanFactory == null) {
            doDispatch(command, callback);
            return;
        }
        Span span = spanFactory.createDispatchCommandSpan(command, false).start();
        try (SpanScope ignored = span.makeCurrent()) {
            doDispatch(spanFactory.propagateContext(command), new TracedCallback<>(span, callback));
        } catch (RuntimeException | Error e) {
            // The callback will not be called: the span ends here.
            span.recordException(e);
            TracedCallback.endSpan(span, command);
            throw e;
        }
    }

    /** See {@link RingCommandBus#dispatchAll}; the list and callback checked by the caller, not empty. */
    void dispatchAll(List<? extends CommandMessage<?>> commands, CommandCallback<Object, Object> callback) {
        if (settings.spanFactory() != null || PipelineThreads.isPipelineThread()) {
            for (CommandMessage<?> command : commands) {
                dispatch(command, callback);
            }
            return;
        }
        MessageMonitor<? super CommandMessage<?>> monitor = settings.messageMonitor();
        if (!lifecycle.enter()) {
            for (CommandMessage<?> command : commands) {
                admission.refuse(command, callback, monitor.onMessageIngested(command));
            }
            return;
        }
        try {
            // Allocated per call, not per command: the batch's own bookkeeping. First every dispatch interceptor, so
            // that one that throws leaves every command undispatched and the monitor untouched, as dispatch does.
            int size = commands.size();
            CommandMessage<?>[] intercepted = new CommandMessage<?>[size];
            for (int i = 0; i < size; i++) {
                intercepted[i] = intercept(commands.get(i));
            }
            MessageMonitor.MonitorCallback[] monitorCallbacks = new MessageMonitor.MonitorCallback[size];
            for (int i = 0; i < size; i++) {
                try {
                    monitorCallbacks[i] = monitor.onMessageIngested(intercepted[i]);
                } catch (RuntimeException | Error monitorFailure) {
                    // Nothing is dispatched: the commands the monitor already took are reported as failed.
                    for (int j = 0; j < i; j++) {
                        monitorCallbacks[j].reportFailure(monitorFailure);
                    }
                    throw monitorFailure;
                }
            }
            int count = 0;
            for (int i = 0; i < size; i++) {
                if (routes.handlerFor(intercepted[i].getCommandName()) == null) {
                    // As dispatch: refused on this thread, without entering the ring.
                    Admission.fail(intercepted[i], callback, monitorCallbacks[i],
                                   CommandRoutes.noHandlerFor(intercepted[i].getCommandName()));
                    continue;
                }
                intercepted[count] = intercepted[i];
                monitorCallbacks[count] = monitorCallbacks[i];
                count++;
            }
            admission.admitAll(intercepted, count, callback, monitorCallbacks);
        } finally {
            lifecycle.exit();
        }
    }

    @SuppressWarnings("unchecked")
    private <C, R> void doDispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        CommandCallback<Object, Object> anyCallback = (CommandCallback<Object, Object>) callback;
        if (PipelineThreads.isPipelineThread()) {
            if (nested.dispatchedHere(command, anyCallback)) {
                return; // run in place, or refused because waiting for it would hang the pipeline
            }
            HeldEffects held = StoreUnitOfWork.heldByCurrent();
            if (held != null) {
                // Sent by a subscriber during a store attempt: it enters the ring only if that attempt commits
                // (HeldEffects). The dispatch interceptors run now, on the sender's thread in its Unit of Work, so
                // that one that refuses the command fails the send, as on Axon's buses.
                held.holdUntilCommit(heldAdmission, intercept(command), anyCallback);
                return;
            }
        }
        throughTheGate(command, anyCallback, true);
    }

    /**
     * Through the lifecycle's gate into the ring: refused after shutdown, else the dispatch interceptors (unless they
     * already ran: a command {@link HeldEffects} held until its store attempt committed), the monitor, the refusal
     * of a command without handler, then a slot.
     */
    private void throughTheGate(CommandMessage<?> command, CommandCallback<Object, Object> callback,
                                boolean intercept) {
        MessageMonitor<? super CommandMessage<?>> monitor = settings.messageMonitor();
        if (!lifecycle.enter()) {
            admission.refuse(command, callback, monitor.onMessageIngested(command));
            return;
        }
        try {
            CommandMessage<?> intercepted = intercept ? intercept(command) : command;
            // Before a slot is claimed: a monitor that throws here fails this dispatch alone (as on Axon's buses),
            // and between claiming and handing over a slot nothing of the user's runs, so no sequence stays claimed.
            MessageMonitor.MonitorCallback monitorCallback = monitor.onMessageIngested(intercepted);
            if (routes.handlerFor(intercepted.getCommandName()) == null) {
                // As Axon's AsynchronousCommandBus: refused on the dispatching thread, without entering the ring.
                Admission.fail(intercepted, callback, monitorCallback,
                               CommandRoutes.noHandlerFor(intercepted.getCommandName()));
                return;
            }
            admission.admit(intercepted, callback, monitorCallback);
        } finally {
            lifecycle.exit();
        }
    }

    private CommandMessage<?> intercept(CommandMessage<?> command) {
        return intercept(dispatchInterceptors, command);
    }

    /** @return the command as the dispatch interceptors, in their order, leave it */
    @SuppressWarnings("unchecked")
    static CommandMessage<?> intercept(List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors,
                                       CommandMessage<?> command) {
        CommandMessage<?> intercepted = command;
        for (MessageDispatchInterceptor<? super CommandMessage<?>> interceptor : dispatchInterceptors) {
            intercepted = (CommandMessage<?>) interceptor.handle(intercepted);
        }
        return intercepted;
    }

    /**
     * Puts a message for an aggregate that is no command (a deadline, see {@link RingRepository#send}) in the ring:
     * as a dispatch, but without the dispatch interceptors, the message monitor and a dispatch span.
     */
    void deliver(CommandMessage<?> delivery, CommandCallback<Object, Object> callback) {
        if (!lifecycle.enter()) {
            admission.refuse(delivery, callback, NoOpMessageMonitorCallback.INSTANCE);
            return;
        }
        try {
            admission.admit(delivery, callback, NoOpMessageMonitorCallback.INSTANCE);
        } finally {
            lifecycle.exit();
        }
    }
}
