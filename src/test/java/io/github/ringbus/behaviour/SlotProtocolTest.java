package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Reject;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.tracing.Span;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * A slot is claimed, filled, published, completed and cleared whatever user code throws on the way (callback, span
 * factory; the message monitor is in {@link MonitorTest}): later commands still complete, each callback is called
 * exactly once, and a slot's next command sees nothing of the one before. The rings here have two slots, so every
 * second command reuses a slot.
 */
class SlotProtocolTest {

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    @Test
    void callbackThatThrowsOnAFailedCommandLeavesNothingToTheNextCommandInItsSlot() {
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1));
        ring.sendAndWait(new Open("a"));
        AtomicInteger calls = new AtomicInteger();

        ring.bus.dispatch(asCommandMessage(new Reject("a")), (command, result) -> {
            calls.incrementAndGet();
            throw new IllegalStateException("callback fails on purpose");
        });
        List<Outcome> deposits = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            deposits.add(ring.send(new Deposit("a", 1)));
        }

        for (int i = 0; i < deposits.size(); i++) {
            assertThat(deposits.get(i).awaitSuccess()).isEqualTo((long) i + 1);
        }
        assertThat(calls).hasValue(1);
        assertThat(ring.storedEvents("a")).hasSize(7);
    }

    @Test
    void handlerInterceptorThatThrowsFailsThatCommandOnlyAndLeavesNothingToTheNextCommandInItsSlot() {
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1));
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Deposit deposit && deposit.amount() == 13) {
                throw new IllegalStateException("the interceptor fails on purpose");
            }
            return chain.proceed();
        });
        ring.sendAndWait(new Open("a"));

        Outcome failing = ring.send(new Deposit("a", 13));
        List<Outcome> deposits = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            deposits.add(ring.send(new Deposit("a", 1)));
        }

        assertThat(failing.awaitFailure()).hasMessage("the interceptor fails on purpose");
        for (int i = 0; i < deposits.size(); i++) {
            assertThat(deposits.get(i).awaitSuccess()).isEqualTo((long) i + 1);
        }
        assertThat(ring.storedEvents("a")).hasSize(6);
    }

    @Test
    void commitHandlerThatThrowsFailsThatCommandsCallbackOnceAndLeavesNothingToTheNextCommandInItsSlot() {
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1));
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Deposit deposit && deposit.amount() == 13) {
                unitOfWork.onCommit(u -> {
                    throw new IllegalStateException("the commit handler fails on purpose");
                });
            }
            return chain.proceed();
        });
        ring.sendAndWait(new Open("a"));

        Outcome failing = ring.send(new Deposit("a", 13));
        List<Outcome> deposits = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            deposits.add(ring.send(new Deposit("a", 1)));
        }

        assertThat(failing.awaitFailure()).hasMessage("the commit handler fails on purpose");
        assertThat(failing.calls()).isEqualTo(1);
        // The commit handler runs after the append (see the Known limits): the deposit of 13 is stored.
        for (int i = 0; i < deposits.size(); i++) {
            assertThat(deposits.get(i).awaitSuccess()).isEqualTo(13L + i + 1);
        }
        assertThat(ring.storedEvents("a")).hasSize(7);
    }

    @Test
    void handleSpanThatThrowsWhenItEndsLeavesTheCommandsOutcomeAndItsAggregateIntact() {
        ThrowingSpanFactory spans = new ThrowingSpanFactory();
        spans.handleSpanEndThrows = command -> command.getPayload() instanceof Deposit;
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1).spanFactory(spans));
        ring.sendAndWait(new Open("a"));

        List<Outcome> deposits = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            deposits.add(ring.send(new Deposit("a", 2)));
        }

        for (int i = 0; i < deposits.size(); i++) {
            assertThat(deposits.get(i).awaitSuccess()).isEqualTo(2L * (i + 1));
        }
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 2),
                                                             new Deposited("a", 2), new Deposited("a", 2),
                                                             new Deposited("a", 2));
        assertThat(spans.handleSpansEnded).hasValue(5);
    }

    @Test
    void handleSpanThatCannotBeCreatedFailsThatCommandOnlyWithTheSpanFactorysException() {
        ThrowingSpanFactory spans = new ThrowingSpanFactory();
        spans.handleSpanCreationThrows = command -> command.getPayload() instanceof Deposit deposit
                && deposit.amount() == 13;
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1).spanFactory(spans));
        ring.sendAndWait(new Open("a"));

        Outcome failing = ring.send(new Deposit("a", 13));
        List<Outcome> deposits = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            deposits.add(ring.send(new Deposit("a", 1)));
        }

        assertThat(failing.awaitFailure()).hasMessage("the span factory fails on purpose");
        for (int i = 0; i < deposits.size(); i++) {
            assertThat(deposits.get(i).awaitSuccess()).isEqualTo((long) i + 1);
        }
        assertThat(ring.storedEvents("a")).hasSize(5);
    }

    @Test
    void dispatchSpanThatThrowsWhenItEndsDoesNotFailADispatchWhoseCommandWasAccepted() {
        ThrowingSpanFactory spans = new ThrowingSpanFactory();
        spans.dispatchSpanEndThrows = true;
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1).spanFactory(spans));

        Outcome opened = ring.send(new Open("a"));
        Outcome deposited = ring.send(new Deposit("a", 3));

        opened.awaitSuccess();
        assertThat(deposited.awaitSuccess()).isEqualTo(3L);
        assertThat(opened.calls()).isEqualTo(1);
        assertThat(deposited.calls()).isEqualTo(1);
    }

    /** Axon's command bus span factory, with spans that throw where a test asks. */
    static final class ThrowingSpanFactory implements CommandBusSpanFactory {

        volatile Predicate<CommandMessage<?>> handleSpanCreationThrows = command -> false;
        volatile Predicate<CommandMessage<?>> handleSpanEndThrows = command -> false;
        volatile boolean dispatchSpanEndThrows;
        final AtomicInteger handleSpansEnded = new AtomicInteger();

        @Override
        public Span createDispatchCommandSpan(CommandMessage<?> commandMessage, boolean distributed) {
            return span(() -> {
                if (dispatchSpanEndThrows) {
                    throw new IllegalStateException("the dispatch span fails to end on purpose");
                }
            });
        }

        @Override
        public Span createHandleCommandSpan(CommandMessage<?> commandMessage, boolean distributed) {
            if (handleSpanCreationThrows.test(commandMessage)) {
                throw new IllegalStateException("the span factory fails on purpose");
            }
            return span(() -> {
                handleSpansEnded.incrementAndGet();
                if (handleSpanEndThrows.test(commandMessage)) {
                    throw new IllegalStateException("the handle span fails to end on purpose");
                }
            });
        }

        @Override
        public <T> CommandMessage<T> propagateContext(CommandMessage<T> commandMessage) {
            return commandMessage;
        }

        private static Span span(Runnable onEnd) {
            return new Span() {
                @Override
                public Span start() {
                    return this;
                }

                @Override
                public void end() {
                    onEnd.run();
                }

                @Override
                public Span recordException(Throwable t) {
                    return this;
                }
            };
        }
    }
}
