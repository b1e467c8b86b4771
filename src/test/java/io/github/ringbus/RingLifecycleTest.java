package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The bus's one state machine: start, the dispatch gate, and the order of shutdown's steps. */
class RingLifecycleTest {

    /** Records what the lifecycle asked of the stages, and the state it was in when it asked. */
    private final List<String> steps = new CopyOnWriteArrayList<>();
    private RingLifecycle lifecycle;
    private final RingStages stages = new RingStages() {
        @Override
        public void start() {
            steps.add("start");
        }

        @Override
        public void drainAndStop(long timeoutNanos) {
            steps.add("drainAndStop while " + lifecycle.state() + ", slots may free: " + lifecycle.slotsMayFree());
        }

        @Override
        public void completeUnfinished() {
            steps.add("completeUnfinished while " + lifecycle.state() + ", slots may free: "
                              + lifecycle.slotsMayFree());
        }
    };

    private RingLifecycle lifecycle(Duration shutdownTimeout) {
        lifecycle = new RingLifecycle(stages, shutdownTimeout, () -> steps.add("afterStop"));
        return lifecycle;
    }

    @Test
    void dispatchersAreRefusedBeforeStart() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        assertThat(lifecycle.enter()).isFalse();
        assertThat(lifecycle.state()).isEqualTo(RingLifecycle.State.NEW);
        assertThat(lifecycle.nobodyInside()).isTrue();
    }

    @Test
    void startStartsTheStagesOnceAndLetsDispatchersIn() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        lifecycle.start();
        lifecycle.start();
        assertThat(steps).containsExactly("start");
        assertThat(lifecycle.enter()).isTrue();
        assertThat(lifecycle.nobodyInside()).isFalse();
        lifecycle.exit();
        assertThat(lifecycle.nobodyInside()).isTrue();
    }

    @Test
    void shutdownDrainsTheRingThenHaltsThenCompletesTheRest() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        lifecycle.start();
        lifecycle.shutdown();
        assertThat(steps).containsExactly("start",
                                          "drainAndStop while DRAINING, slots may free: true",
                                          "completeUnfinished while HALTED, slots may free: false",
                                          "afterStop");
        assertThat(lifecycle.state()).isEqualTo(RingLifecycle.State.STOPPED);
    }

    @Test
    void dispatchersAreRefusedFromShutdownOn() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        lifecycle.start();
        lifecycle.shutdown();
        assertThat(lifecycle.enter()).isFalse();
        assertThat(lifecycle.nobodyInside()).isTrue();
    }

    @Test
    void shutdownOfABusNeverStartedLeavesTheStagesAlone() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        lifecycle.shutdown();
        assertThat(steps).containsExactly("afterStop");
        assertThat(lifecycle.state()).isEqualTo(RingLifecycle.State.STOPPED);
    }

    @Test
    void aSecondShutdownDoesNothing() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        lifecycle.start();
        lifecycle.shutdown();
        lifecycle.shutdown();
        assertThat(steps).containsOnlyOnce("afterStop");
    }

    @Test
    void aStoppedBusCannotBeRestarted() {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(1));
        lifecycle.start();
        lifecycle.shutdown();
        assertThatThrownBy(lifecycle::start).isInstanceOf(IllegalStateException.class)
                                            .hasMessageContaining("cannot be restarted");
    }

    @Test
    void shutdownWaitsForADispatcherInsideBeforeDrainingTheRing() throws Exception {
        RingLifecycle lifecycle = lifecycle(Duration.ofSeconds(30));
        lifecycle.start();
        assertThat(lifecycle.enter()).isTrue();
        CompletableFuture<Void> shutdown = CompletableFuture.runAsync(lifecycle::shutdown);
        Thread.sleep(100);
        assertThat(steps).containsExactly("start");
        assertThat(lifecycle.state()).isEqualTo(RingLifecycle.State.DRAINING);
        lifecycle.exit();
        shutdown.get(10, TimeUnit.SECONDS);
        assertThat(steps).contains("drainAndStop while DRAINING, slots may free: true");
    }

    @Test
    void aDispatcherStillInsideAtTheTimeoutHoldsBackCompletingTheRestUntilItLeaves() throws Exception {
        RingLifecycle lifecycle = lifecycle(Duration.ofMillis(50));
        lifecycle.start();
        assertThat(lifecycle.enter()).isTrue();
        CompletableFuture<Void> shutdown = CompletableFuture.runAsync(lifecycle::shutdown);
        Thread.sleep(300);
        // The ring was stopped after the timeout; the dispatcher, told no slot will free, has yet to leave.
        assertThat(lifecycle.slotsMayFree()).isFalse();
        assertThat(steps).doesNotContain("completeUnfinished while HALTED, slots may free: false");
        lifecycle.exit();
        shutdown.get(10, TimeUnit.SECONDS);
        assertThat(steps).endsWith("completeUnfinished while HALTED, slots may free: false", "afterStop");
    }
}
