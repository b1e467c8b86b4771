package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.fixtures.RingbusFixture.Tally;
import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.RingFullException;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.eventsourcing.IncompatibleAggregateException;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * What the caller is told when a command cannot be handled: every failure reaches the command's callback (or, for a
 * null argument, the dispatching caller) with an exception that names the problem, and the bus goes on handling the
 * commands after it.
 */
class BadInputTest {

    private RingbusFixture ring;
    /** Lets the blocking handler go; also released after each test, so that a failed test leaves nothing stuck. */
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void shutDown() {
        release.countDown();
        if (ring != null) {
            ring.close();
        }
    }

    record NobodyHandlesThis(String anything) {
    }

    @Test
    void commandWithoutSubscribedHandlerFailsWithNoHandlerForCommandExceptionNamingTheCommand() {
        ring = RingbusFixture.started();

        Throwable failure = ring.send(new NobodyHandlesThis("x")).awaitFailure();

        assertThat(failure).isInstanceOf(NoHandlerForCommandException.class)
                           .hasMessageContaining(NobodyHandlesThis.class.getName());
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void nonCreationCommandWithNullTargetIdentifierFailsNamingTheCommandClassAndTheMissingIdentifier() {
        ring = RingbusFixture.started();

        Throwable failure = ring.send(new Deposit(null, 5)).awaitFailure();

        // The exception and message of Axon's AnnotationCommandTargetResolver.
        assertThat(failure).isInstanceOf(IllegalArgumentException.class)
                           .hasMessageContaining("[Deposit]")
                           .hasMessageContaining("@TargetAggregateIdentifier");
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void nonCreationCommandWhoseClassHasNoTargetAggregateIdentifierFailsNamingTheCommandClass() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Tally.Start("t"));

        Throwable failure = ring.send(new Tally.Unaddressed("t")).awaitFailure();

        assertThat(failure).isInstanceOf(IllegalArgumentException.class)
                           .hasMessageContaining("[Unaddressed]")
                           .hasMessageContaining("@TargetAggregateIdentifier");
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void creationCommandWithNullIdentifierFailsBecauseTheAggregateWouldHaveNoIdentifierAndStoresNothing() {
        ring = RingbusFixture.started();

        Throwable failure = ring.send(new Open(null)).awaitFailure();

        // Axon's own check, made when the creation event is applied.
        assertThat(failure).isInstanceOf(IncompatibleAggregateException.class)
                           .hasMessageContaining("identifier must be non-null");
        assertThat(ring.allStoredPayloads()).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void commandForUnknownAggregateFailsWithAggregateNotFoundExceptionCarryingTheIdentifier() {
        ring = RingbusFixture.started();

        Throwable failure = ring.send(new Deposit("ghost", 1)).awaitFailure();

        assertThat(failure).isInstanceOf(AggregateNotFoundException.class)
                           .hasMessageContaining("not found");
        assertThat(((AggregateNotFoundException) failure).getAggregateIdentifier()).isEqualTo("ghost");
        assertThat(ring.storedPayloads("ghost")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void creatingAnAggregateThatExistsFailsNamingTheIdentifierAndLeavesTheOriginalUnchanged() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 7));

        Throwable failure = ring.send(new Open("a")).awaitFailure();

        assertThat(failure).isInstanceOf(AggregateStreamCreationException.class)
                           .hasMessageContaining("[a]")
                           .hasMessageContaining("already exists")
                           .hasMessageContaining(Open.class.getName());
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 7));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(8L);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void secondCreationDispatchedBeforeTheFirstIsStoredFailsToo() {
        ring = RingbusFixture.started();

        Outcome first = ring.send(new Open("b"));
        Outcome second = ring.send(new Open("b"));

        assertThat(first.awaitSuccess()).isEqualTo("b");
        assertThat(second.awaitFailure()).isInstanceOf(AggregateStreamCreationException.class)
                                         .hasMessageContaining("[b]");
        assertThat(ring.storedPayloads("b")).containsExactly(new Opened("b"));
        assertThat(ring.storedSequenceNumbers("b")).containsExactly(0L);
    }

    @Test
    void nullCommandIsRejectedByDispatchWithANullPointerExceptionThatSaysSo() {
        ring = RingbusFixture.started();
        Outcome callback = new Outcome();

        assertThatThrownBy(() -> ring.bus.dispatch(null, callback))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("command must not be null");
        assertThatThrownBy(() -> ring.bus.dispatch(null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("command must not be null");
        assertThat(callback.calls()).isZero();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void nullCallbackIsRejectedByDispatchWithANullPointerExceptionThatSaysSo() {
        ring = RingbusFixture.started();

        assertThatThrownBy(() -> ring.bus.dispatch(asCommandMessage(new Open("a")), null))
                .isInstanceOf(NullPointerException.class)
                .hasMessageContaining("callback must not be null");
        assertThat(ring.storedPayloads("a")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    /**
     * As on Axon's own command buses, a dispatch interceptor runs on the dispatching thread before the command is
     * given a slot, and its exception is thrown to the dispatching caller; the callback is not called.
     */
    @Test
    void dispatchInterceptorFailureIsThrownToTheDispatcherAndTakesNoSlot() {
        ring = RingbusFixture.started(b -> b.ringSize(4));
        MessageDispatchInterceptor<CommandMessage<?>> refuseOpens = messages -> (index, command) -> {
            if (command.getPayload() instanceof Open open && "refused".equals(open.accountId())) {
                throw new IllegalArgumentException("interceptor refuses " + command.getCommandName());
            }
            return command;
        };
        ring.bus.registerDispatchInterceptor(refuseOpens);
        Outcome callback = new Outcome();

        assertThatThrownBy(() -> ring.bus.dispatch(asCommandMessage(new Open("refused")), callback))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("interceptor refuses " + Open.class.getName());

        assertThat(callback.calls()).isZero();
        assertThat(ring.bus.remainingCapacity()).isEqualTo(4);
        assertThat(ring.storedPayloads("refused")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void dispatchBeforeStartFailsThroughTheCallbackWithIllegalStateExceptionNamingTheCommand() {
        ring = RingbusFixture.notStarted();

        Outcome outcome = ring.send(new Open("a"));

        assertThat(outcome.isDone()).as("refused at once, on the dispatching thread").isTrue();
        assertThat(outcome.awaitFailure()).isInstanceOf(IllegalStateException.class)
                                          .hasMessageContaining("not been started")
                                          .hasMessageContaining(Open.class.getName());
        assertThat(outcome.calls()).isEqualTo(1);

        ring.bus.start();
        assertThat(ring.storedPayloads("a")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void dispatchAfterShutdownFailsThroughTheCallbackWithShutdownInProgressExceptionNamingTheCommand() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));
        ring.bus.shutdown();

        Outcome outcome = ring.send(new Deposit("a", 1));

        assertThat(outcome.isDone()).as("refused at once, on the dispatching thread").isTrue();
        assertThat(outcome.awaitFailure()).isInstanceOf(ShutdownInProgressException.class)
                                          .hasMessageContaining("shut down")
                                          .hasMessageContaining(Deposit.class.getName());
        assertThat(outcome.calls()).isEqualTo(1);
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
        // A shut-down bus refuses every later command the same way; none of them waits.
        assertThat(ring.send(new Open("c")).awaitFailure()).isInstanceOf(ShutdownInProgressException.class);
    }

    @Test
    void fullRingWithFailFastRefusesTheNextCommandNamingTheRingSizeAndLosesNothingElse() {
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1).fullRingPolicy(FullRingPolicy.FAIL_FAST));
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        List<Outcome> blocked = fillTheRing(4);
        assertThat(ring.bus.remainingCapacity()).isZero();

        Outcome refused = ring.send(blockCommand("fifth"));

        assertThat(refused.isDone()).as("refused at once, on the dispatching thread").isTrue();
        assertThat(refused.awaitFailure()).isInstanceOf(RingFullException.class)
                                          .hasMessageContaining("[" + BLOCK + "]")
                                          .hasMessageContaining("all 4 slots")
                                          .hasMessageContaining("FAIL_FAST");
        release.countDown();
        assertEachCompletedOnceSuccessfully(blocked);
        assertThat(refused.calls()).isEqualTo(1);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void fullRingWithBlockWithTimeoutRefusesTheCommandOnceTheTimeoutHasPassed() {
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1)
                                           .fullRingPolicy(FullRingPolicy.BLOCK_WITH_TIMEOUT)
                                           .fullRingTimeout(Duration.ofMillis(150)));
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        List<Outcome> blocked = fillTheRing(4);

        long start = System.nanoTime();
        Outcome refused = ring.send(blockCommand("fifth"));
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);

        assertThat(refused.isDone()).as("refused by the time dispatch returns").isTrue();
        assertThat(waitedMillis).as("dispatch waited for the timeout").isGreaterThanOrEqualTo(150);
        assertThat(refused.awaitFailure()).isInstanceOf(RingFullException.class)
                                          .hasMessageContaining("[" + BLOCK + "]")
                                          .hasMessageContaining("all 4 slots")
                                          .hasMessageContaining("150 ms");
        release.countDown();
        assertEachCompletedOnceSuccessfully(blocked);
        assertThat(refused.calls()).isEqualTo(1);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void fullRingWithBlockWithTimeoutAcceptsTheCommandWhenASlotFreesInTime() throws Exception {
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1)
                                           .fullRingPolicy(FullRingPolicy.BLOCK_WITH_TIMEOUT)
                                           .fullRingTimeout(Duration.ofSeconds(10)));
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        List<Outcome> blocked = fillTheRing(4);

        CompletableFuture<Outcome> fifth = CompletableFuture.supplyAsync(() -> ring.send(blockCommand("fifth")));
        release.countDown();

        assertThat(fifth.get(10, TimeUnit.SECONDS).awaitSuccess()).isEqualTo("fifth");
        assertEachCompletedOnceSuccessfully(blocked);
    }

    /** Dispatches {@code count} commands to the blocking handler; the first blocks the only handler thread. */
    private List<Outcome> fillTheRing(int count) {
        List<Outcome> outcomes = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            outcomes.add(ring.send(blockCommand("blocked-" + i)));
        }
        for (Outcome outcome : outcomes) {
            assertThat(outcome.isDone()).as("a command that found a slot waits for the handler").isFalse();
        }
        return outcomes;
    }

    private static void assertEachCompletedOnceSuccessfully(List<Outcome> outcomes) {
        for (int i = 0; i < outcomes.size(); i++) {
            assertThat(outcomes.get(i).awaitSuccess()).isEqualTo("blocked-" + i);
        }
        for (Outcome outcome : outcomes) {
            assertThat(outcome.calls()).isEqualTo(1);
        }
    }
}
