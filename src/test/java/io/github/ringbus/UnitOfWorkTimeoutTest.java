package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.FaultyStorageEngine.HeldAppend;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.messaging.timeout.UnitOfWorkTimeoutInterceptor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Axon's Unit of Work timeout ({@code UnitOfWorkTimeoutInterceptor}, {@code axon.timeout.*} in Spring Boot) on the
 * ring: a handler that runs too long is interrupted and its command fails as on {@code SimpleCommandBus}; the time
 * limit ends when the handler thread is done with the command, so it never fires while the command waits for its
 * batch's store, on a handler thread that has gone on to other commands. (Not run on the oldest Axon ringbus supports,
 * which has no Unit of Work timeouts.)
 */
class UnitOfWorkTimeoutTest {

    private static final int TIMEOUT_MILLIS = 300;

    /** Where the interceptors schedule their warnings and interrupts: its completed tasks are the limits that fired. */
    private final ScheduledThreadPoolExecutor limits = new ScheduledThreadPoolExecutor(1);
    private RingbusFixture ring;

    {
        limits.setRemoveOnCancelPolicy(true); // an ended limit is gone, not counted as run
    }

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
        limits.shutdownNow();
    }

    /** A timeout of 300 ms without warnings (their threshold is past the timeout). */
    private UnitOfWorkTimeoutInterceptor timeout(String component) {
        return new UnitOfWorkTimeoutInterceptor(component, TIMEOUT_MILLIS, TIMEOUT_MILLIS * 10, TIMEOUT_MILLIS, limits,
                                                LoggerFactory.getLogger(UnitOfWorkTimeoutTest.class));
    }

    private static Object sleepFiveSeconds(Object command) throws InterruptedException {
        Thread.sleep(5_000);
        return "slept";
    }

    @Test
    void aHandlerThatRunsPastTheTimeoutIsInterruptedAndItsCommandFailsAsOnSimpleCommandBus() throws Exception {
        SimpleCommandBus simple = SimpleCommandBus.builder().build();
        simple.registerHandlerInterceptor(timeout("SimpleCommandBus"));
        simple.subscribe("sleep", command -> sleepFiveSeconds(command));
        ring = RingbusFixture.started();
        ring.bus.registerHandlerInterceptor(timeout("RingCommandBus"));
        ring.bus.subscribe("sleep", command -> sleepFiveSeconds(command));

        CompletableFuture<CommandResultMessage<?>> onSimple = new CompletableFuture<>();
        simple.dispatch(RingbusFixture.namedCommand("sleep", "sleep"), (command, result) -> onSimple.complete(result));
        Outcome onRing = ring.send(RingbusFixture.namedCommand("sleep", "sleep"));

        Throwable expected = onSimple.get(10, TimeUnit.SECONDS).exceptionResult();
        Throwable actual = onRing.awaitFailure();
        assertThat(actual).isInstanceOf(expected.getClass());
        assertThat(onRing.awaitFailure()).hasMessageContaining("RingCommandBus");
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void theTimeLimitEndsWhenTheHandlerIsDoneNotWhenTheSlowStoreHasStoredTheCommand() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.bus.registerHandlerInterceptor(timeout("RingCommandBus"));
        ring.sendAndWait(new Open("a"));
        HeldAppend held = ring.engine.holdNextAppend();

        Outcome deposit = ring.send(new Deposit("a", 5));
        held.awaitStarted();
        Thread.sleep(TIMEOUT_MILLIS * 3L); // the command waits for its store three times its handler's limit
        held.release();

        assertThat(deposit.awaitSuccess()).isEqualTo(5L);
        assertThat(limits.getCompletedTaskCount()).as("time limits that fired").isZero();
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(6L);
    }
}
