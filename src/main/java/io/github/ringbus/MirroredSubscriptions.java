package io.github.ringbus;

import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.Registration;
import org.axonframework.messaging.MessageHandler;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The command handlers subscribed on the bus, and the other buses they are subscribed on too
 * ({@link RingCommandBus#subscribeHandlersAlsoOn}): a handler subscribed later is subscribed on every such bus, and
 * cancelling it cancels it everywhere.
 * <p>
 * Thread-safe: subscriptions and mirrors change under this object's lock (rarely: at configuration time).
 * <p>
 * Tests: {@code spring.InjectedSimpleCommandBusTest}, {@code behaviour.DifferentialTest}.
 */
final class MirroredSubscriptions {

    private final CommandRoutes routes;
    /** Guarded by this. */
    private final List<CommandBus> mirrors = new ArrayList<>();
    /** Guarded by this. */
    private final List<Subscription> subscriptions = new ArrayList<>();

    MirroredSubscriptions(CommandRoutes routes) {
        this.routes = routes;
    }

    /** Subscribes the handler on the ring and on every mirror; the registration cancels it everywhere. */
    Registration subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        Subscription subscription = new Subscription(commandName, handler, routes.subscribe(commandName, handler));
        synchronized (this) {
            subscriptions.add(subscription);
            for (CommandBus mirror : mirrors) {
                subscription.alsoOn(mirror);
            }
        }
        return () -> {
            synchronized (this) {
                subscriptions.remove(subscription);
            }
            return subscription.cancel();
        };
    }

    /** Subscribes every handler, those so far and those to come, on {@code other} too. */
    synchronized void alsoOn(CommandBus other) {
        mirrors.add(other);
        for (Subscription subscription : subscriptions) {
            subscription.alsoOn(other);
        }
    }

    /** A handler subscribed on the ring, and its registrations there and on the buses it is mirrored on. */
    private static final class Subscription {

        private final String commandName;
        private final MessageHandler<? super CommandMessage<?>> handler;
        private final List<Registration> registrations = new CopyOnWriteArrayList<>();

        Subscription(String commandName, MessageHandler<? super CommandMessage<?>> handler, Registration onRing) {
            this.commandName = commandName;
            this.handler = handler;
            registrations.add(onRing);
        }

        void alsoOn(CommandBus other) {
            registrations.add(other.subscribe(commandName, handler));
        }

        boolean cancel() {
            boolean cancelled = false;
            for (Registration registration : registrations) {
                cancelled |= registration.cancel();
            }
            return cancelled;
        }
    }
}
