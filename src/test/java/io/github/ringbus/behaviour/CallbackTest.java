package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.RingFullException;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.axonframework.messaging.GenericMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * An application's callback runs on the bus's callback thread, after its command completed on the complete stage; the
 * future of {@code sendAndWait} is completed on the complete stage's thread itself. A callback may dispatch another
 * command and wait, as on {@code SimpleCommandBus}: into a full ring too, for the complete stage frees slots without
 * waiting for callbacks.
 */
class CallbackTest {

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

    @Test
    void anApplicationsCallbackRunsOnTheCallbackThread() {
        ring = RingbusFixture.started();

        Outcome outcome = ring.send(new Open("a"));
        outcome.awaitSuccess();

        assertThat(outcome.thread()).isEqualTo("ringbus-callbacks");
    }

    @Test
    void theFutureOfSendAndWaitIsCompletedOnTheCompleteStagesThread() throws Exception {
        ring = RingbusFixture.started();
        FutureCallback<Object, Object> future = new FutureCallback<>();
        AtomicReference<String> completingThread = new AtomicReference<>();
        CountDownLatch completed = new CountDownLatch(1);
        future.whenComplete((result, failure) -> {
            completingThread.set(Thread.currentThread().getName());
            completed.countDown();
        });

        ring.bus.dispatch(asCommandMessage(new Open("a")), future);
        // Not future.get(): a thread waiting in get() may run the dependents itself once the future is complete.
        assertThat(completed.await(10, TimeUnit.SECONDS)).isTrue();

        assertThat(completingThread.get()).matches(StageThreads::completes);
    }

    @Test
    void callbackMayDispatchAnotherCommandWhenTheRingHasRoom() {
        ring = RingbusFixture.started();
        Outcome nested = new Outcome();

        ring.bus.dispatch(asCommandMessage(new Open("a")), (command, result) ->
                ring.bus.dispatch(asCommandMessage(new Deposit("a", 5)), nested));

        assertThat(nested.awaitSuccess()).isEqualTo(5L);
        assertThat(nested.calls()).isEqualTo(1);
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 5));
    }

    /**
     * Four commands fill a ring of four; the first one's callback dispatches a fifth. That callback runs on the
     * callback thread after its command freed its slot, and the default {@link FullRingPolicy#BLOCK} waits there for
     * room as on any other thread of the application: the fifth command is accepted once the others complete.
     */
    @Test
    void aCallbackThatDispatchesIntoAFullRingWaitsForRoom() {
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1).fullRingPolicy(FullRingPolicy.BLOCK));
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        Outcome nested = new Outcome();
        Outcome first = new Outcome();
        ring.bus.dispatch(blockCommand("blocked-0"), (command, result) -> {
            ring.bus.dispatch(asCommandMessage(new Open("nested")), nested);
            first.onResult(command, result);
        });
        List<Outcome> others = new ArrayList<>();
        for (int i = 1; i < 4; i++) {
            others.add(ring.send(blockCommand("blocked-" + i)));
        }
        assertThat(ring.bus.remainingCapacity()).isZero();

        release.countDown();

        assertThat(nested.awaitSuccess()).isEqualTo("nested");
        assertThat(nested.calls()).isEqualTo(1);
        assertThat(first.awaitSuccess()).isEqualTo("blocked-0");
        for (int i = 0; i < others.size(); i++) {
            assertThat(others.get(i).awaitSuccess()).isEqualTo("blocked-" + (i + 1));
            assertThat(others.get(i).calls()).isEqualTo(1);
        }
        assertThat(ring.storedPayloads("nested")).containsExactly(new Opened("nested"));
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void callbackThatThrowsDoesNotStopLaterCommandsFromCompleting() {
        ring = RingbusFixture.started();
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<Boolean> succeeded = new AtomicReference<>();

        ring.bus.dispatch(asCommandMessage(new Open("a")), (command, result) -> {
            calls.incrementAndGet();
            succeeded.set(!result.isExceptional());
            throw new IllegalStateException("callback fails on purpose");
        });
        Object balance = ring.sendAndWait(new Deposit("a", 2)).getPayload();

        assertThat(balance).isEqualTo(2L);
        assertThat(calls).hasValue(1);
        assertThat(succeeded.get()).isTrue();
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 2));
        ring.assertStillHandlesValidCommands();
    }

    /** The ways a command is refused on the dispatching thread, with its callback called there and then. */
    enum Refusal {
        BEFORE_START(IllegalStateException.class),
        AFTER_SHUTDOWN(ShutdownInProgressException.class),
        NO_HANDLER(NoHandlerForCommandException.class),
        FULL_RING(RingFullException.class);

        final Class<? extends Throwable> failure;

        Refusal(Class<? extends Throwable> failure) {
            this.failure = failure;
        }
    }

    /**
     * Dispatch either throws (a failing dispatch interceptor) and never calls the callback, or returns and calls it
     * exactly once. A refused command's callback runs on the dispatching thread, inside {@code dispatch}: what it
     * throws is logged, as on the complete stage, and does not come out of {@code dispatch}, where the caller would
     * take it for a dispatch that failed without a callback.
     */
    @ParameterizedTest
    @EnumSource(Refusal.class)
    void aCallbackThatThrowsOnARefusalIsCalledOnceAndDispatchStillReturns(Refusal refusal) {
        ring = refusal == Refusal.BEFORE_START
                ? RingbusFixture.notStarted()
                : RingbusFixture.started(b -> b.ringSize(4).fullRingPolicy(FullRingPolicy.FAIL_FAST));
        Object payload = new Open("refused");
        if (refusal == Refusal.AFTER_SHUTDOWN) {
            ring.bus.shutdown();
        } else if (refusal == Refusal.NO_HANDLER) {
            payload = new GenericCommandMessage<>(new GenericMessage<>("x"), "nobody-handles-this");
        } else if (refusal == Refusal.FULL_RING) {
            ring.bus.subscribe(BLOCK, blockingHandler(release));
            for (int i = 0; i < 4; i++) {
                ring.send(blockCommand("blocked-" + i));
            }
        }
        AtomicInteger calls = new AtomicInteger();
        AtomicReference<CommandResultMessage<?>> reported = new AtomicReference<>();

        ring.bus.dispatch(payload instanceof GenericCommandMessage<?> command ? command : asCommandMessage(payload),
                          (command, result) -> {
                              calls.incrementAndGet();
                              reported.set(result);
                              throw new IllegalStateException("callback fails on purpose");
                          });

        assertThat(calls).as("called back before dispatch returned").hasValue(1);
        assertThat(reported.get().exceptionResult()).isInstanceOf(refusal.failure);
        assertThat(ring.storedPayloads("refused")).isEmpty();
    }
}
