package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Proxy;
import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The preload stage recognises the handler object that Axon's {@code AggregateAnnotationCommandHandler} subscribes for
 * an aggregate's instance commands by its class name (the class is private to Axon); this fails if an Axon upgrade
 * renames it, instead of ringbus silently going back to loading every aggregate twice.
 */
class AxonInstanceCommandHandlerTest {

    @Test
    void axonSubscribesInstanceCommandsWithTheHandlerClassThePreloadStageRecognises() {
        Map<String, MessageHandler<?>> subscribed = new HashMap<>();
        CommandBus recording = (CommandBus) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[]{CommandBus.class}, (proxy, method, args) -> {
                    if (method.getName().equals("subscribe")) {
                        subscribed.put((String) args[0], (MessageHandler<?>) args[1]);
                        return (org.axonframework.common.Registration) () -> true;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
        AggregateAnnotationCommandHandler.<Account>builder()
                                         .aggregateType(Account.class)
                                         .repository(EventSourcingRepository.builder(Account.class)
                                                                            .eventStore(store)
                                                                            .build())
                                         .build()
                                         .subscribe(recording);

        MessageHandler<?> deposit = subscribed.get(AccountCommands.Deposit.class.getName());
        MessageHandler<?> open = subscribed.get(AccountCommands.Open.class.getName());

        assertThat(deposit.getClass().getName()).isEqualTo(PreloadStage.AXON_INSTANCE_COMMAND_HANDLER);
        assertThat(open.getClass().getName()).isNotEqualTo(PreloadStage.AXON_INSTANCE_COMMAND_HANDLER);
        store.shutDown();
    }
}
