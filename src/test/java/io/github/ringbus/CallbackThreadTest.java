package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.axonframework.commandhandling.callbacks.NoOpCallback;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * The thread that calls the callbacks that may wait ({@link CallbackThread}): which callbacks it takes, their order,
 * what a failing or blocking callback does to the others, and shutdown.
 */
class CallbackThreadTest {

    private final CallbackThread callbacks = new CallbackThread("test-callbacks");
    private final List<String> calls = new CopyOnWriteArrayList<>();

    @AfterEach
    void stop() throws InterruptedException {
        callbacks.stop(TimeUnit.SECONDS.toNanos(5));
    }

    private CommandCallback<Object, Object> recording(String name) {
        return (command, result) -> calls.add(name + "@" + Thread.currentThread().getName());
    }

    private void hand(CommandCallback<Object, Object> callback) {
        callbacks.hand(callback, asCommandMessage("command"), asCommandResultMessage("result"));
    }

    @Test
    void handedOverCallbacksAreCalledOnItsThreadInTheOrderHandedOver() throws InterruptedException {
        callbacks.start();
        for (int i = 0; i < 100; i++) {
            hand(recording("c" + i));
        }
        callbacks.stop(TimeUnit.SECONDS.toNanos(5));

        assertThat(calls).hasSize(100);
        for (int i = 0; i < 100; i++) {
            assertThat(calls.get(i)).isEqualTo("c" + i + "@test-callbacks");
        }
    }

    @Test
    void aCallbackThatThrowsLeavesTheOnesAfterItToBeCalled() throws InterruptedException {
        callbacks.start();
        hand((command, result) -> {
            throw new IllegalStateException("callback fails on purpose");
        });
        hand(recording("after"));
        callbacks.stop(TimeUnit.SECONDS.toNanos(5));

        assertThat(calls).containsExactly("after@test-callbacks");
    }

    @Test
    void anInterruptACallbackLeavesIsClearedBeforeTheNext() throws InterruptedException {
        callbacks.start();
        hand((command, result) -> Thread.currentThread().interrupt());
        hand((command, result) -> calls.add("interrupted=" + Thread.currentThread().isInterrupted()));
        callbacks.stop(TimeUnit.SECONDS.toNanos(5));

        assertThat(calls).containsExactly("interrupted=false");
    }

    @Test
    void stopCallsEveryCallbackHandedOverBeforeItReturns() throws InterruptedException {
        callbacks.start();
        CountDownLatch release = new CountDownLatch(1);
        hand((command, result) -> {
            try {
                release.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        hand(recording("queued"));
        release.countDown();
        callbacks.stop(TimeUnit.SECONDS.toNanos(5));

        assertThat(calls).containsExactly("queued@test-callbacks");
        assertThat(callbacks.thread().isAlive()).isFalse();
    }

    @Test
    void aCallbackHandedOverAfterTheThreadEndedIsCalledOnTheHandingThread() throws InterruptedException {
        callbacks.start();
        callbacks.stop(TimeUnit.SECONDS.toNanos(5));

        hand(recording("late"));

        assertThat(calls).containsExactly("late@" + Thread.currentThread().getName());
    }

    @Test
    void aCallbackHandedOverBeforeTheThreadStartedIsCalledOnTheHandingThread() {
        hand(recording("early"));

        assertThat(calls).containsExactly("early@" + Thread.currentThread().getName());
    }

    @Test
    void axonsCallbacksThatOnlyWakeOrLogRunOnTheCompleteThread() {
        assertThat(CallbackThread.runsOnCompleteThread(new FutureCallback<>(), false)).isTrue();
        assertThat(CallbackThread.runsOnCompleteThread(NoOpCallback.INSTANCE, false)).isTrue();
        assertThat(CallbackThread.runsOnCompleteThread(LoggingCallback.INSTANCE, false)).isTrue();
    }

    @Test
    void anApplicationsCallbackAndASubclassOfAxonsFutureCallbackAreHandedOver() {
        CommandCallback<Object, Object> own = (command, result) -> {
        };
        FutureCallback<Object, Object> subclass = new FutureCallback<>() {
            @Override
            public void onResult(CommandMessage<?> commandMessage,
                                 org.axonframework.commandhandling.CommandResultMessage<?> result) {
                super.onResult(commandMessage, result);
            }
        };

        assertThat(CallbackThread.runsOnCompleteThread(own, false)).isFalse();
        assertThat(CallbackThread.runsOnCompleteThread(own, true)).isFalse();
        assertThat(CallbackThread.runsOnCompleteThread(subclass, false)).isFalse();
    }
}
