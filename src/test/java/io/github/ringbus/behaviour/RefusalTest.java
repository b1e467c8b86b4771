package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.LoggedLines;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Commands the bus refuses without entering the ring: one with no handler is failed on the dispatching thread with
 * Axon's own exception and message; a fire-and-forget command dispatched after shutdown, which no callback can
 * report, is logged (at most one line a second, counting the drops) and reported to the message monitor.
 */
class RefusalTest {

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    record NobodyHandlesThis(String anything) {
    }

    @Test
    void commandWithoutHandlerIsRefusedOnTheDispatchingThreadWithSimpleCommandBussException() {
        ring = RingbusFixture.started();
        CommandResultMessage<?> onSimple;
        try (SimpleBusTwin simple = new SimpleBusTwin()) {
            onSimple = simple.send(new NobodyHandlesThis("x"));
        }

        Outcome outcome = ring.send(new NobodyHandlesThis("x"));

        assertThat(outcome.isDone()).as("called back before dispatch returned").isTrue();
        assertThat(outcome.thread()).isEqualTo(Thread.currentThread().getName());
        assertThat(outcome.awaitFailure()).isInstanceOf(NoHandlerForCommandException.class)
                                          .hasMessage(onSimple.exceptionResult().getMessage());
        assertThat(outcome.calls()).isEqualTo(1);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void fireAndForgetCommandsDispatchedAfterShutdownAreLoggedAtMostOnceASecondWithHowManyWereDropped()
            throws InterruptedException {
        RecordingMonitor monitor = new RecordingMonitor();
        ring = RingbusFixture.started(b -> b.messageMonitor(monitor));
        ring.bus.shutdown();

        List<String> firstBurst = warningsWhile(() -> {
            for (int i = 0; i < 50; i++) {
                ring.bus.dispatch(asCommandMessage(new Open("dropped-" + i)));
            }
        });
        Thread.sleep(1_100);
        List<String> nextDrop = warningsWhile(() -> ring.bus.dispatch(asCommandMessage(new Open("one-more"))));

        assertThat(firstBurst).hasSize(1);
        assertThat(firstBurst.get(0)).contains("WARN", "dropped 1 fire-and-forget command",
                                               "[" + Open.class.getName() + "]", "shut down");
        assertThat(nextDrop).hasSize(1);
        assertThat(nextDrop.get(0)).contains("dropped 50 fire-and-forget command");
        assertThat(monitor.lines).hasSize(102)
                                 .filteredOn(line -> line.startsWith("failure Open "))
                                 .hasSize(51)
                                 .allMatch(line -> line.endsWith(ShutdownInProgressException.class.getSimpleName()));
    }

    /** The lines logged at WARN (or above) while the action ran. */
    private static List<String> warningsWhile(Runnable action) {
        return LoggedLines.whileRunning(action).stream()
                          .filter(line -> line.contains(" WARN ") || line.contains(" ERROR "))
                          .collect(Collectors.toList());
    }
}
