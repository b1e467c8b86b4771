package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.eventsourcing.EventSourcedAggregate;
import org.axonframework.messaging.annotation.MessageHandlingMember;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.ForwardingCommandMessageHandlingMember;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Runs a command on an existing aggregate as Axon's {@code AnnotatedAggregate.handle} does, without the streams it
 * builds for every command: Axon collects the aggregate's command handler interceptors and filters all of its command
 * handlers into new lists each time; here the handlers of each aggregate class are collected once, in Axon's order,
 * and the first that can handle the command is invoked, inside the aggregate's scope (so that {@code apply} works) as
 * Axon invokes it.
 * <p>
 * Only aggregate classes for which this is the whole of Axon's logic take this path: a class with
 * {@code @CommandHandlerInterceptor}s or with command handlers on its entities ({@code @AggregateMember}, which Axon
 * forwards by entity) is handled by Axon's own {@code handle}. Exceptions reach the caller as Axon's would: what the
 * handler throws, or {@link NoHandlerForCommandException} when no handler matches.
 * <p>
 * Thread safety: the per-class handler lists are computed once per class (a concurrent map of this invoker's own) and
 * read-only after.
 *
 * @param <T> the aggregate type
 * <p>
 * Tests: {@code behaviour.AggregateInvocationTest}, {@code ShutDownBusIsCollectedTest}.
 */
final class InstanceCommandInvoker<T> {

    private final AggregateModel<T> model;
    /**
     * The plan of each aggregate class this invoker has met (the root and its polymorphic subtypes). A map of the
     * invoker's own, not a {@code ClassValue}: a class keeps its {@code ClassValue}s' values for as long as the class
     * lives, and a plan holds the handlers, their parameter resolvers and, through them, the whole configuration, so
     * every bus ever built would stay in memory (ShutDownBusIsCollectedTest).
     */
    private final ConcurrentHashMap<Class<?>, Plan> plans = new ConcurrentHashMap<>(4);

    InstanceCommandInvoker(AggregateModel<T> model) {
        this.model = Objects.requireNonNull(model, "model");
    }

    /**
     * Handles {@code command} on {@code aggregate}.
     *
     * @return the handler's result
     * @throws Exception what the handler threw, or {@link NoHandlerForCommandException}
     */
    Object handle(EventSourcedAggregate<T> aggregate, CommandMessage<?> command) throws Exception {
        T root = aggregate.getAggregateRoot();
        Plan plan = root == null ? null : planOf(root.getClass());
        if (plan == null || plan.handlers == null) {
            return aggregate.handle(command);
        }
        MessageHandlingMember<? super T> handler = plan.handlerFor(command);
        try {
            // invoke() runs the function inside the aggregate's scope, as Axon's handle does; it wraps checked
            // exceptions, so they travel as Rethrown and are unwrapped below. The capturing lambda is the one
            // allocation of this path, against the lists, streams and lambdas Axon's handle allocates per command.
            return aggregate.invoke(target -> {
                try {
                    return handler.handle(command, target);
                } catch (RuntimeException | Error e) {
                    throw e;
                } catch (Exception e) {
                    throw new Rethrown(e);
                }
            });
        } catch (Rethrown rethrown) {
            throw rethrown.checked;
        }
    }

    private Plan planOf(Class<?> rootType) {
        Plan plan = plans.get(rootType);
        return plan != null ? plan : plans.computeIfAbsent(rootType, this::plan);
    }

    @SuppressWarnings("unchecked")
    private Plan plan(Class<?> rootType) {
        Class<? extends T> type = (Class<? extends T>) rootType;
        boolean intercepted = model.commandHandlerInterceptors(type).findAny().isPresent();
        List<MessageHandlingMember<? super T>> handlers = model.commandHandlers(type).collect(Collectors.toList());
        boolean forwarding = handlers.stream().anyMatch(
                handler -> handler.unwrap(ForwardingCommandMessageHandlingMember.class).isPresent());
        return new Plan(intercepted || forwarding ? null : handlers.toArray(new MessageHandlingMember[0]));
    }

    /** The command handlers of one aggregate class in Axon's order; null when Axon's own handle must run. */
    private final class Plan {

        private final MessageHandlingMember<? super T>[] handlers;

        private Plan(MessageHandlingMember<? super T>[] handlers) {
            this.handlers = handlers;
        }

        MessageHandlingMember<? super T> handlerFor(CommandMessage<?> command) {
            for (MessageHandlingMember<? super T> handler : handlers) {
                if (handler.canHandle(command)) {
                    return handler;
                }
            }
            throw new NoHandlerForCommandException(command);
        }
    }

    /** A checked exception of a handler, carried through {@code Aggregate.invoke}. */
    private static final class Rethrown extends RuntimeException {

        private final Exception checked;

        Rethrown(Exception checked) {
            super(null, null, false, false);
            this.checked = checked;
        }
    }
}
