package io.github.ringbus.spring;

import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.Registration;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A decorator around a command bus, as monitoring and fault-injection starters put around the application's bus:
 * records the name of every command dispatched through it and delegates everything. It implements nothing but
 * {@link CommandBus} (no Axon {@code Lifecycle}), as such wrappers usually do.
 */
public final class RecordingCommandBus implements CommandBus {

    final CommandBus delegate;
    final List<String> dispatched = new CopyOnWriteArrayList<>();

    public RecordingCommandBus(CommandBus delegate) {
        this.delegate = delegate;
    }

    @Override
    public <C> void dispatch(CommandMessage<C> command) {
        dispatched.add(command.getCommandName());
        delegate.dispatch(command);
    }

    @Override
    public <C, R> void dispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        dispatched.add(command.getCommandName());
        delegate.dispatch(command, callback);
    }

    @Override
    public Registration subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        return delegate.subscribe(commandName, handler);
    }

    @Override
    public Registration registerHandlerInterceptor(
            MessageHandlerInterceptor<? super CommandMessage<?>> handlerInterceptor) {
        return delegate.registerHandlerInterceptor(handlerInterceptor);
    }

    @Override
    public Registration registerDispatchInterceptor(
            MessageDispatchInterceptor<? super CommandMessage<?>> dispatchInterceptor) {
        return delegate.registerDispatchInterceptor(dispatchInterceptor);
    }
}
