package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The count of the last minute: what was added within 60 s counts, what is older does not. */
class MinuteCountTest {

    private static final long T0 = TimeUnit.SECONDS.toNanos(1_000_000);

    private final MinuteCount count = new MinuteCount();

    @Test
    void nothingAddedCountsNothing() {
        assertThat(count.lastMinute(T0)).isZero();
    }

    @Test
    void whatWasAddedWithinTheMinuteCounts() {
        count.add(3, T0);
        count.add(2, T0 + TimeUnit.MILLISECONDS.toNanos(400));
        count.add(4, T0 + TimeUnit.SECONDS.toNanos(30));

        assertThat(count.lastMinute(T0 + TimeUnit.SECONDS.toNanos(59))).isEqualTo(9);
    }

    @Test
    void whatIsOlderThanAMinuteNoLongerCounts() {
        count.add(3, T0);
        count.add(4, T0 + TimeUnit.SECONDS.toNanos(30));

        assertThat(count.lastMinute(T0 + TimeUnit.SECONDS.toNanos(61))).isEqualTo(4);
        assertThat(count.lastMinute(T0 + TimeUnit.SECONDS.toNanos(120))).isZero();
    }

    @Test
    void aBucketUsedAgainAMinuteLaterStartsFromNothing() {
        count.add(3, T0);
        count.add(1, T0 + TimeUnit.SECONDS.toNanos(60));

        assertThat(count.lastMinute(T0 + TimeUnit.SECONDS.toNanos(60))).isEqualTo(1);
    }
}
