package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/** The one waiting policy: pauses that double from a minimum to a maximum. */
class BackoffTest {

    private final Backoff backoff = new Backoff(1_000, 50_000);

    @Test
    void pausesDoubleFromTheMinimumUpToTheMaximum() {
        assertThat(backoff.pauseNanos(0)).isEqualTo(1_000);
        assertThat(backoff.pauseNanos(1)).isEqualTo(2_000);
        assertThat(backoff.pauseNanos(5)).isEqualTo(32_000);
        assertThat(backoff.pauseNanos(6)).isEqualTo(50_000);
    }

    @Test
    void thePauseStaysAtTheMaximumHoweverManyAttemptsWereMade() {
        assertThat(backoff.pauseNanos(63)).isEqualTo(50_000);
        assertThat(backoff.pauseNanos(1_000)).isEqualTo(50_000);
        assertThat(backoff.pauseNanos(Integer.MAX_VALUE)).isEqualTo(50_000);
    }

    @Test
    void awaitUntilReturnsAsSoonAsTheConditionHolds() {
        AtomicInteger checks = new AtomicInteger();
        boolean held = backoff.awaitUntil(() -> checks.incrementAndGet() >= 3, System.nanoTime() + 10_000_000_000L);
        assertThat(held).isTrue();
        assertThat(checks).hasValue(3);
    }

    @Test
    void awaitUntilGivesUpAtTheDeadline() {
        long start = System.nanoTime();
        boolean held = backoff.awaitUntil(() -> false, start + 5_000_000);
        assertThat(held).isFalse();
        assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(5_000_000);
    }
}
