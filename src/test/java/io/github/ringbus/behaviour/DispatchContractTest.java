package io.github.ringbus.behaviour;

import io.github.ringbus.behaviour.BehaviourRing.Outcome;
import io.github.ringbus.bus.FullRingPolicy;
import io.github.ringbus.bus.RingFullException;
import io.github.ringbus.fixtures.AccountCommands;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.GenericCommandResultMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.callbacks.NoOpCallback;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.Message;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MetaData;
import org.axonframework.messaging.correlation.MessageOriginProvider;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.monitoring.MessageMonitor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * What a dispatcher gets back, and what the message monitor hears, exactly as on Axon's SimpleCommandBus: result
 * messages (their metadata, a handler's own result message), failures of user components around dispatch and
 * completion, refusals, and handler interceptors for commands whose aggregate is missing.
 */
class DispatchContractTest {

    private static final String ECHO = "echo";
    private BehaviourRing ring;

    @AfterEach
    void close() {
        if (ring != null) {
            ring.close();
        }
    }

    private BehaviourRing start(UnaryOperator<io.github.ringbus.RingCommandBus.Builder> settings) {
        ring = BehaviourRing.started(settings);
        return ring;
    }

    private static CommandMessage<Object> named(String name, Object payload) {
        return new GenericCommandMessage<>(new GenericMessage<>(payload), name);
    }

    /** Dispatches the command on a SimpleCommandBus set up the same way, and returns its result. */
    private static CommandResultMessage<?> onSimpleCommandBus(MessageHandler<CommandMessage<?>> handler,
                                                             CommandMessage<?> command) {
        SimpleCommandBus simple = SimpleCommandBus.builder().build();
        simple.registerHandlerInterceptor(new CorrelationDataInterceptor<>(List.of(new MessageOriginProvider())));
        simple.subscribe(ECHO, handler);
        Outcome outcome = new Outcome();
        simple.dispatch(command, outcome);
        return outcome.await();
    }

    private CommandResultMessage<?> onRing(MessageHandler<CommandMessage<?>> handler, CommandMessage<?> command) {
        start(b -> b);
        ring.bus.registerHandlerInterceptor(new CorrelationDataInterceptor<>(List.of(new MessageOriginProvider())));
        ring.bus.subscribe(ECHO, handler);
        return ring.send(command).await();
    }

    // --- result messages --------------------------------------------------------------------------------------------

    @Test
    void aResultCarriesTheCorrelationDataOfItsCommandAsOnSimpleCommandBus() {
        CommandMessage<Object> command = named(ECHO, "hello");
        MessageHandler<CommandMessage<?>> handler = c -> "handled " + c.getPayload();

        CommandResultMessage<?> result = onRing(handler, command);

        CommandResultMessage<?> expected = onSimpleCommandBus(handler, command);
        assertThat(expected.getMetaData()).containsEntry("correlationId", command.getIdentifier());
        assertThat(result.getPayload()).isEqualTo("handled hello");
        assertThat(result.getMetaData()).isEqualTo(expected.getMetaData());
    }

    @Test
    void aHandlerFailuresResultCarriesTheCorrelationDataOfItsCommandAsOnSimpleCommandBus() {
        CommandMessage<Object> command = named(ECHO, "hello");
        MessageHandler<CommandMessage<?>> handler = c -> {
            throw new IllegalArgumentException("refused on purpose");
        };

        CommandResultMessage<?> result = onRing(handler, command);

        CommandResultMessage<?> expected = onSimpleCommandBus(handler, command);
        assertThat(result.exceptionResult()).isInstanceOf(IllegalArgumentException.class);
        assertThat(result.getMetaData()).isEqualTo(expected.getMetaData()).isNotEmpty();
    }

    @Test
    void aHandlerReturningAMessageGetsItAsItsPayloadWithItsMetaDataAsOnSimpleCommandBus() {
        Message<String> returned = new GenericMessage<>("inner", MetaData.with("origin", "handler"));
        MessageHandler<CommandMessage<?>> handler = c -> returned;
        CommandMessage<Object> command = named(ECHO, "hello");

        CommandResultMessage<?> result = onRing(handler, command);

        CommandResultMessage<?> expected = onSimpleCommandBus(handler, command);
        assertThat(expected.getPayload()).isSameAs(returned);
        assertThat(result.getPayload()).isSameAs(returned);
        assertThat(result.getMetaData()).isEqualTo(expected.getMetaData()).containsEntry("origin", "handler");
    }

    @Test
    void aHandlerReturningACommandResultMessageGetsThatVeryMessage() {
        CommandResultMessage<String> returned = GenericCommandResultMessage.asCommandResultMessage("own result");
        MessageHandler<CommandMessage<?>> handler = c -> returned;
        CommandMessage<Object> command = named(ECHO, "hello");

        CommandResultMessage<?> result = onRing(handler, command);

        assertThat(onSimpleCommandBus(handler, command)).isSameAs(returned);
        assertThat(result).isSameAs(returned);
    }

    // --- user components that throw ---------------------------------------------------------------------------------

    @Test
    void aMessageMonitorThatThrowsOnIngestFailsThatDispatchAloneAndTheRingGoesOn() {
        start(b -> b.ringSize(4).messageMonitor(message -> {
            if ("boom".equals(message.getPayload())) {
                throw new IllegalStateException("monitor fails on purpose");
            }
            return NO_REPORT;
        }));
        ring.bus.subscribe(ECHO, c -> c.getPayload());

        assertThatThrownBy(() -> ring.bus.dispatch(named(ECHO, "boom"), new Outcome()))
                .hasMessageContaining("monitor fails on purpose");

        for (int i = 0; i < 12; i++) { // three times round the ring
            assertThat(ring.send(named(ECHO, "ok-" + i)).awaitSuccess()).isEqualTo("ok-" + i);
        }
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void aMessageMonitorThatThrowsWhenReportingStillGetsTheCallbackCalledAndLeavesTheSlotClean() {
        start(b -> b.ringSize(2).messageMonitor(message -> new MessageMonitor.MonitorCallback() {
            @Override
            public void reportSuccess() {
                throw new IllegalStateException("reportSuccess fails on purpose");
            }

            @Override
            public void reportFailure(Throwable cause) {
                throw new IllegalStateException("reportFailure fails on purpose");
            }

            @Override
            public void reportIgnored() {
            }
        }));
        ring.bus.subscribe(ECHO, c -> {
            if ("fail".equals(c.getPayload())) {
                throw new IllegalArgumentException("handler fails on purpose");
            }
            return c.getPayload();
        });

        assertThat(ring.send(named(ECHO, "fail")).awaitFailure()).hasMessage("handler fails on purpose");
        for (int i = 0; i < 6; i++) { // the same two slots, again and again: no stale failure
            Outcome outcome = ring.send(named(ECHO, "ok-" + i));
            assertThat(outcome.awaitSuccess()).isEqualTo("ok-" + i);
            assertThat(outcome.calls()).isEqualTo(1);
        }
    }

    @Test
    void aHandleSpanThatThrowsWhenEndedLeavesCommandsAndTheirAggregateExact() {
        start(b -> b.spanFactory(new org.axonframework.commandhandling.CommandBusSpanFactory() {
            @Override
            public org.axonframework.tracing.Span createDispatchCommandSpan(CommandMessage<?> command,
                                                                              boolean distributed) {
                return org.axonframework.tracing.NoOpSpanFactory.NoOpSpan.INSTANCE;
            }

            @Override
            public org.axonframework.tracing.Span createHandleCommandSpan(CommandMessage<?> command,
                                                                            boolean distributed) {
                return new ThrowingSpan();
            }

            @Override
            public <T> CommandMessage<T> propagateContext(CommandMessage<T> command) {
                return command;
            }
        }));

        ring.sendAndWait(new AccountCommands.Open("spanned"));
        Object first = ring.send(new AccountCommands.Deposit("spanned", 5)).awaitSuccess();
        Object second = ring.send(new AccountCommands.Deposit("spanned", 7)).awaitSuccess();

        assertThat(first).isEqualTo(5L);
        assertThat(second).isEqualTo(12L);
        assertThat(ring.storedSequenceNumbers("spanned")).containsExactly(0L, 1L, 2L);
    }

    /** A tracing span whose end throws, as a broken tracing library's might. */
    private static final class ThrowingSpan implements org.axonframework.tracing.Span {

        @Override
        public org.axonframework.tracing.Span start() {
            return this;
        }

        @Override
        public void end() {
            throw new IllegalStateException("span end fails on purpose");
        }

        @Override
        public org.axonframework.tracing.Span recordException(Throwable t) {
            return this;
        }
    }

    // --- refusals ---------------------------------------------------------------------------------------------------

    @Test
    void aCommandWithoutHandlerIsRefusedOnTheDispatchingThreadWithoutEnteringTheRing() {
        RecordingMonitor monitor = new RecordingMonitor();
        start(b -> b.ringSize(2).messageMonitor(monitor));
        long free = ring.bus.remainingCapacity();

        Outcome outcome = ring.send(named("nobody-handles-this", "x"));

        assertThat(outcome.isDone()).isTrue();
        assertThat(outcome.thread()).isEqualTo(Thread.currentThread().getName());
        assertThat(outcome.awaitFailure()).isInstanceOf(NoHandlerForCommandException.class)
                                          .hasMessage("No handler was subscribed for command [nobody-handles-this].");
        assertThat(ring.bus.remainingCapacity()).isEqualTo(free);
        assertThat(monitor.failures).singleElement().isInstanceOf(NoHandlerForCommandException.class);
    }

    @Test
    void aCommandRefusedBecauseTheRingIsFullIsReportedToTheMonitorAsAFailure() throws Exception {
        RecordingMonitor monitor = new RecordingMonitor();
        start(b -> b.ringSize(2).fullRingPolicy(FullRingPolicy.FAIL_FAST).messageMonitor(monitor));
        CountDownLatch release = new CountDownLatch(1);
        ring.bus.subscribe(BehaviourRing.BLOCK, BehaviourRing.blockingHandler(release));
        Outcome first = ring.send(BehaviourRing.blockCommand(1));
        Outcome second = ring.send(BehaviourRing.blockCommand(2));

        Outcome refused = ring.send(BehaviourRing.blockCommand(3));

        assertThat(refused.awaitFailure()).isInstanceOf(RingFullException.class);
        assertThat(monitor.failures).singleElement().isInstanceOf(RingFullException.class);
        release.countDown();
        first.awaitSuccess();
        second.awaitSuccess();
    }

    @Test
    void aFireAndForgetCommandAfterShutdownIsReportedToTheMonitorAsAFailure() {
        RecordingMonitor monitor = new RecordingMonitor();
        start(b -> b.messageMonitor(monitor));
        ring.bus.subscribe(ECHO, c -> c.getPayload());
        ring.bus.shutdown();

        ring.bus.dispatch(named(ECHO, "late"));
        ring.bus.dispatch(named(ECHO, "later"), NoOpCallback.INSTANCE);

        assertThat(monitor.failures).hasSize(2).allMatch(f -> f instanceof ShutdownInProgressException);
    }

    // --- handler interceptors ---------------------------------------------------------------------------------------

    @Test
    void handlerInterceptorsSeeACommandWhoseAggregateDoesNotExistAsOnSimpleCommandBus() {
        start(b -> b);
        List<Object> intercepted = new CopyOnWriteArrayList<>();
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            intercepted.add(unitOfWork.getMessage().getPayload());
            return chain.proceed();
        });
        AccountCommands.Deposit deposit = new AccountCommands.Deposit("no-such-account", 5);

        Throwable failure = ring.send(deposit).awaitFailure();

        assertThat(failure).isInstanceOf(AggregateNotFoundException.class);
        assertThat(intercepted).containsExactly(deposit);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void aHandlerInterceptorThatAnswersACommandForAMissingAggregateItselfGetsItsAnswerReturned() {
        start(b -> b);
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) ->
                unitOfWork.getMessage().getPayload() instanceof AccountCommands.Deposit ? "answered by interceptor"
                                                                                         : chain.proceed());

        Object result = ring.send(new AccountCommands.Deposit("no-such-account", 5)).awaitSuccess();

        assertThat(result).isEqualTo("answered by interceptor");
        assertThat(ring.storedPayloads("no-such-account")).isEmpty();
    }

    // --- monitors ---------------------------------------------------------------------------------------------------

    private static final MessageMonitor.MonitorCallback NO_REPORT = new MessageMonitor.MonitorCallback() {
        @Override
        public void reportSuccess() {
        }

        @Override
        public void reportFailure(Throwable cause) {
        }

        @Override
        public void reportIgnored() {
        }
    };

    /** Records the failures it is told of. */
    static final class RecordingMonitor implements MessageMonitor<CommandMessage<?>> {

        final List<Throwable> failures = new CopyOnWriteArrayList<>();
        final AtomicBoolean any = new AtomicBoolean();

        @Override
        public MonitorCallback onMessageIngested(CommandMessage<?> message) {
            any.set(true);
            return new MonitorCallback() {
                @Override
                public void reportSuccess() {
                }

                @Override
                public void reportFailure(Throwable cause) {
                    failures.add(cause);
                }

                @Override
                public void reportIgnored() {
                }
            };
        }
    }
}
