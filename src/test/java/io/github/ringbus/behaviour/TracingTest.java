package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Reject;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.tracing.Span;
import org.axonframework.tracing.SpanScope;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * With Axon's tracing on, the dispatch span carries what it carries on Axon's buses (Axon's own
 * {@code SimpleCommandBusTest} and {@code AsynchronousCommandBusTest} check the same): a handler's exception and a
 * missing handler are recorded on it, and the callback runs with it current. Each case runs on ringbus and on Axon's
 * {@link SimpleCommandBus} with the same span factory.
 */
class TracingTest {

    private final RecordingSpans ringSpans = new RecordingSpans();
    private final RecordingSpans simpleSpans = new RecordingSpans();
    private RingbusFixture ring;
    private SimpleBusTwin simple;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
        if (simple != null) {
            simple.close();
        }
    }

    private void startBoth() {
        ring = RingbusFixture.started(b -> b.spanFactory(ringSpans));
        simple = new SimpleBusTwin(SimpleCommandBus.builder().spanFactory(simpleSpans).build());
    }

    @Test
    void aHandlersExceptionIsRecordedOnTheDispatchSpanAsOnSimpleCommandBus() {
        startBoth();
        ring.sendAndWait(new Open("a"));
        simple.send(new Open("a"));

        ring.sendAndWait(new Reject("a"));
        simple.send(new Reject("a"));

        assertThat(ringSpans.dispatchSpanOf(Reject.class).recorded)
                .singleElement().isInstanceOf(IllegalArgumentException.class);
        assertThat(simpleSpans.dispatchSpanOf(Reject.class).recorded)
                .singleElement().isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aMissingHandlerIsRecordedOnTheDispatchSpanAsOnSimpleCommandBus() {
        startBoth();
        CommandMessage<Object> unknown = new GenericCommandMessage<>(new GenericMessage<>("x"), "nobody-handles-this");

        ring.send(unknown).awaitFailure();
        simple.send(unknown);

        assertThat(ringSpans.dispatchSpanNamed("nobody-handles-this").recorded)
                .singleElement().isInstanceOf(NoHandlerForCommandException.class);
        assertThat(simpleSpans.dispatchSpanNamed("nobody-handles-this").recorded)
                .singleElement().isInstanceOf(NoHandlerForCommandException.class);
    }

    @Test
    void theCallbackRunsWithTheDispatchSpanCurrentAsOnSimpleCommandBus() throws Exception {
        startBoth();
        CompletableFuture<Span> currentOnRing = new CompletableFuture<>();
        CompletableFuture<Span> currentOnSimple = new CompletableFuture<>();

        ring.bus.dispatch(asCommandMessage(new Open("b")), (c, r) -> currentOnRing.complete(RecordingSpans.current()));
        simple.bus.dispatch(asCommandMessage(new Open("b")),
                            (c, r) -> currentOnSimple.complete(RecordingSpans.current()));

        assertThat(currentOnRing.get(10, TimeUnit.SECONDS)).isSameAs(ringSpans.dispatchSpanOf(Open.class));
        assertThat(currentOnSimple.get(10, TimeUnit.SECONDS)).isSameAs(simpleSpans.dispatchSpanOf(Open.class));
    }

    @Test
    void theDispatchSpanEndsOnceTheCommandHasCompleted() {
        startBoth();

        CommandResultMessage<?> opened = ring.sendAndWait(new Open("c"));

        assertThat(opened.isExceptional()).isFalse();
        RecordingSpan dispatch = ringSpans.dispatchSpanOf(Open.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!dispatch.ended && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertThat(dispatch.ended).as("dispatch span ended").isTrue();
    }

    /** A span that records the exceptions recorded on it, whether it ended, and which span is current. */
    static final class RecordingSpan implements Span {

        final String name;
        final List<Throwable> recorded = new CopyOnWriteArrayList<>();
        volatile boolean ended;

        RecordingSpan(String name) {
            this.name = name;
        }

        @Override
        public Span start() {
            return this;
        }

        @Override
        public SpanScope makeCurrent() {
            Span previous = RecordingSpans.CURRENT.get();
            RecordingSpans.CURRENT.set(this);
            return () -> RecordingSpans.CURRENT.set(previous);
        }

        @Override
        public void end() {
            ended = true;
        }

        @Override
        public Span recordException(Throwable t) {
            recorded.add(t);
            return this;
        }
    }

    /** Axon's command bus span factory, recording the dispatch spans it made. */
    static final class RecordingSpans implements CommandBusSpanFactory {

        static final ThreadLocal<Span> CURRENT = new ThreadLocal<>();
        final List<RecordingSpan> dispatchSpans = new CopyOnWriteArrayList<>();

        static Span current() {
            return CURRENT.get();
        }

        @Override
        public Span createDispatchCommandSpan(CommandMessage<?> commandMessage, boolean distributed) {
            RecordingSpan span = new RecordingSpan(commandMessage.getCommandName());
            dispatchSpans.add(span);
            return span;
        }

        @Override
        public Span createHandleCommandSpan(CommandMessage<?> commandMessage, boolean distributed) {
            return new RecordingSpan("handle " + commandMessage.getCommandName());
        }

        @Override
        public <T> CommandMessage<T> propagateContext(CommandMessage<T> commandMessage) {
            return commandMessage;
        }

        RecordingSpan dispatchSpanOf(Class<?> commandType) {
            return dispatchSpanNamed(commandType.getName());
        }

        RecordingSpan dispatchSpanNamed(String commandName) {
            return dispatchSpans.stream().filter(span -> span.name.equals(commandName)).reduce((a, b) -> b)
                                .orElseThrow(() -> new AssertionError("no dispatch span for " + commandName));
        }
    }
}
