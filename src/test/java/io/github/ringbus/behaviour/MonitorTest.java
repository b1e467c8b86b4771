package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.RingFullException;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Reject;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * The message monitor hears of every dispatched command exactly as on Axon's buses: ingested, then one success or
 * failure; a command the bus refuses (not started, shut down, full ring, no handler) is a failure. A monitor that
 * throws never stops the ring: on ingest the dispatch fails as on {@code SimpleCommandBus} and no slot is taken; on
 * report the callback is still called once, and the slot's next command sees nothing of it.
 */
class MonitorTest {

    private final RecordingMonitor monitor = new RecordingMonitor();
    private RingbusFixture ring;
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void shutDown() {
        release.countDown();
        if (ring != null) {
            ring.close();
        }
    }

    private void startSmallRing() {
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1).messageMonitor(monitor));
    }

    @Test
    void everyCommandIsIngestedThenReportedOnceAsOnSimpleCommandBus() {
        startSmallRing();
        RecordingMonitor simpleMonitor = new RecordingMonitor();
        try (SimpleBusTwin simple = new SimpleBusTwin(simpleMonitor)) {
            for (Object command : List.of(new Open("a"), new Deposit("a", 1), new Reject("a"))) {
                ring.send(command).await();
                simple.send(command);
            }
        }

        assertThat(monitor.lines).containsExactlyElementsOf(simpleMonitor.lines)
                                 .containsExactly("ingested Open", "success Open", "ingested Deposit",
                                                  "success Deposit", "ingested Reject",
                                                  "failure Reject IllegalArgumentException");
    }

    @Test
    void monitorThatThrowsOnIngestFailsThatDispatchAsOnSimpleCommandBusAndLaterCommandsStillComplete() {
        startSmallRing();
        monitor.throwOnIngest = command -> command.getPayload() instanceof Deposit deposit && deposit.amount() == 13;
        ring.sendAndWait(new Open("a"));

        Outcome refused = new Outcome();
        assertThatThrownBy(() -> ring.bus.dispatch(asCommandMessage(new Deposit("a", 13)), refused))
                .isInstanceOf(IllegalStateException.class)
                .hasMessage("the monitor fails on ingesting Deposit");
        try (SimpleBusTwin simple = new SimpleBusTwin(monitor)) {
            assertThatThrownBy(() -> simple.send(new Deposit("a", 13)))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessage("the monitor fails on ingesting Deposit");
        }

        for (int i = 1; i <= 6; i++) {
            assertThat(ring.send(new Deposit("a", 1)).awaitSuccess()).isEqualTo((long) i);
        }
        assertThat(refused.calls()).isZero();
        assertThat(ring.storedEvents("a")).hasSize(7);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void monitorThatThrowsOnReportingSuccessStillLetsEveryCallbackFireOnce() {
        startSmallRing();
        monitor.throwOnSuccess = true;

        List<Outcome> outcomes = new ArrayList<>();
        outcomes.add(ring.send(new Open("a")));
        for (int i = 0; i < 6; i++) {
            outcomes.add(ring.send(new Deposit("a", 1)));
        }

        for (int i = 1; i < outcomes.size(); i++) {
            assertThat(outcomes.get(i).awaitSuccess()).isEqualTo((long) i);
        }
        assertThat(outcomes).allSatisfy(outcome -> assertThat(outcome.calls()).isEqualTo(1));
    }

    @Test
    void monitorThatThrowsOnReportingFailureLeavesNothingToTheNextCommandInTheSameSlot() {
        startSmallRing();
        monitor.throwOnFailure = true;
        ring.sendAndWait(new Open("a"));

        // With two slots, every second command reuses the rejected command's slot.
        Outcome rejected = ring.send(new Reject("a"));
        List<Outcome> deposits = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            deposits.add(ring.send(new Deposit("a", 1)));
        }

        assertThat(rejected.awaitFailure()).isInstanceOf(IllegalArgumentException.class);
        assertThat(rejected.calls()).isEqualTo(1);
        for (int i = 0; i < deposits.size(); i++) {
            assertThat(deposits.get(i).awaitSuccess()).isEqualTo((long) i + 1);
        }
        assertThat(ring.storedEvents("a")).hasSize(7);
    }

    @Test
    void commandWithoutHandlerIsIngestedAndReportedAsAFailureAsOnSimpleCommandBus() {
        startSmallRing();
        RecordingMonitor simpleMonitor = new RecordingMonitor();
        try (SimpleBusTwin simple = new SimpleBusTwin(simpleMonitor)) {
            simple.send(new MonitorTestNobodyHandles());
        }

        ring.send(new MonitorTestNobodyHandles()).awaitFailure();

        assertThat(monitor.lines).containsExactlyElementsOf(simpleMonitor.lines)
                                 .containsExactly("ingested MonitorTestNobodyHandles",
                                                  "failure MonitorTestNobodyHandles "
                                                          + NoHandlerForCommandException.class.getSimpleName());
    }

    record MonitorTestNobodyHandles() {
    }

    @Test
    void commandDispatchedBeforeStartIsIngestedAndReportedAsAFailure() {
        ring = RingbusFixture.notStarted(b -> b.messageMonitor(monitor));

        ring.send(new Open("a")).awaitFailure();

        assertThat(monitor.lines).containsExactly("ingested Open", "failure Open IllegalStateException");
    }

    @Test
    void commandDispatchedAfterShutdownIsIngestedAndReportedAsAFailure() {
        startSmallRing();
        ring.bus.shutdown();

        ring.send(new Open("a")).awaitFailure();

        assertThat(monitor.lines).containsExactly("ingested Open",
                                                  "failure Open " + ShutdownInProgressException.class.getSimpleName());
    }

    @Test
    void commandRefusedByAFullRingIsIngestedAndReportedAsAFailure() {
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1).messageMonitor(monitor)
                                           .fullRingPolicy(FullRingPolicy.FAIL_FAST));
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        Outcome first = ring.send(blockCommand("first"));
        Outcome second = ring.send(blockCommand("second"));

        Throwable refusal = ring.send(new Open("a")).awaitFailure();
        release.countDown();

        assertThat(refusal).isInstanceOf(RingFullException.class);
        first.awaitSuccess();
        second.awaitSuccess();
        assertThat(monitor.lines).contains("ingested Open", "failure Open " + RingFullException.class.getSimpleName());
    }
}
