package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.RingFullException;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Callbacks run on the complete stage's thread. A callback may dispatch another command: it is accepted when the ring
 * has room, and refused at once with a {@link RingFullException} when it has none (whatever the full-ring policy),
 * because the slot it would wait for can only be freed by the very thread that would be waiting.
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
    void callbackRunsOnTheCompleteStagesThread() {
        ring = RingbusFixture.started();

        Outcome outcome = ring.send(new Open("a"));
        outcome.awaitSuccess();

        assertThat(outcome.thread()).matches(StageThreads::completes);
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
     * Four commands fill a ring of four; the first one's callback dispatches a fifth. That callback runs while its
     * own slot is still taken (a slot frees only after its callback), so the ring is certainly full: with the
     * default {@link FullRingPolicy#BLOCK} a waiting dispatch would never return.
     */
    @Test
    void reentrantDispatchIntoAFullRingFailsFastInsteadOfDeadlocking() {
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

        assertThat(nested.awaitFailure()).isInstanceOf(RingFullException.class)
                                         .hasMessageContaining("[" + Open.class.getName() + "]")
                                         .hasMessageContaining("all 4 slots")
                                         .hasMessageFindingMatch("pipeline thread \\[ringbus-(store-)?complete\\]");
        assertThat(nested.calls()).isEqualTo(1);
        assertThat(nested.thread()).matches(StageThreads::completes);
        assertThat(first.awaitSuccess()).isEqualTo("blocked-0");
        for (int i = 0; i < others.size(); i++) {
            assertThat(others.get(i).awaitSuccess()).isEqualTo("blocked-" + (i + 1));
            assertThat(others.get(i).calls()).isEqualTo(1);
        }
        assertThat(ring.storedPayloads("nested")).isEmpty();
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
}
