package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a store thread's attempts came to ({@link StoreHealth}): its time in the store, since when it fails and with
 * what, and the commands it failed in the last minute. Times are given, not read from the clock.
 */
class StoreHealthTest {

    private static final long SECOND = TimeUnit.SECONDS.toNanos(1);
    private final StoreHealth health = new StoreHealth();

    @Test
    void theTimeOfEveryAttemptAddsUpStoredOrNot() {
        health.attemptEnded(10 * SECOND, 11 * SECOND, StoreAttempt.STORED);
        health.attemptEnded(20 * SECOND, 22 * SECOND, StoreAttempt.failed(StoreAttempt.End.APPEND_FAILED,
                                                                           new SQLException("refused")));

        assertThat(health.inStoreNanos(30 * SECOND)).isEqualTo(3 * SECOND);
    }

    @Test
    void anAttemptInProgressCountsUpToNowAndOnceItEndsOnlyUpToItsEnd() {
        health.attemptEnded(10 * SECOND, 11 * SECOND, StoreAttempt.STORED);
        health.attemptStarts(20 * SECOND);

        assertThat(health.inStoreNanos(25 * SECOND)).isEqualTo(6 * SECOND);

        health.attemptEnded(20 * SECOND, 50 * SECOND, StoreAttempt.STORED);

        assertThat(health.inStoreNanos(60 * SECOND)).isEqualTo(31 * SECOND);
    }

    @Test
    void aStoreWhoseLastAttemptStoredIsNotFailing() {
        health.attemptEnded(10 * SECOND, 11 * SECOND, StoreAttempt.failed(StoreAttempt.End.APPEND_FAILED,
                                                                           new SQLException("refused")));
        health.attemptEnded(12 * SECOND, 13 * SECOND, StoreAttempt.STORED);

        assertThat(health.failure(14 * SECOND)).isNull();
    }

    @Test
    void failingAttemptsOneAfterTheOtherCountFromTheFirstAndNameTheLast() {
        health.attemptEnded(10 * SECOND, 11 * SECOND, StoreAttempt.failed(StoreAttempt.End.BEGIN_FAILED,
                                                                           new SQLException("first")));
        health.attemptEnded(15 * SECOND, 16 * SECOND, StoreAttempt.failed(StoreAttempt.End.BEGIN_FAILED,
                                                                           new SQLException("last")));

        StoreFailure failure = health.failure(20 * SECOND);

        assertThat(failure.failingFor()).hasSeconds(10);
        assertThat(failure.sinceLastFailure()).hasSeconds(4);
        assertThat(failure.lastFailure()).isEqualTo("java.sql.SQLException: last");
    }

    @Test
    void theCommandsFailedInTheLastMinuteAreCountedAndOlderOnesForgotten() {
        health.failed(3, 10 * SECOND);
        health.failed(2, 40 * SECOND);

        assertThat(health.failedInLastMinute(45 * SECOND)).isEqualTo(5);
        assertThat(health.failedInLastMinute(99 * SECOND)).isEqualTo(2);
    }

    @Test
    void anAttemptInProgressForASecondOrMoreIsAFailureSinceItBeganThoughNothingFailedYet() {
        health.attemptEnded(10 * SECOND, 11 * SECOND, StoreAttempt.STORED);
        health.attemptStarts(20 * SECOND);

        assertThat(health.failure(20 * SECOND + StoreHealth.STALLED_NANOS - 1)).as("under a second").isNull();
        StoreFailure stalled = health.failure(50 * SECOND);
        assertThat(stalled.failingFor()).hasSeconds(30);
        assertThat(stalled.sinceLastFailure()).isZero();
        assertThat(stalled.lastFailure()).contains("waited 30000 ms");

        health.attemptEnded(20 * SECOND, 51 * SECOND, StoreAttempt.STORED);

        assertThat(health.failure(52 * SECOND)).isNull();
    }

    @Test
    void theRunnerIsTheThreadOfTheFirstAttempt() {
        assertThat(health.runner()).isNull();

        health.attemptStarts(SECOND);

        assertThat(health.runner()).isSameAs(Thread.currentThread());
    }
}
