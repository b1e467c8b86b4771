package io.github.ringbus.spring;

import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.SlowCommits;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The stage threads' shares ({@link ThreadShares}): a share of a thread's time is in [0, 1] from the first read on,
 * whatever the store does meanwhile.
 */
class ThreadSharesTest {

    private static final String HANDLER = "ringbus-preload-handle";
    private static final String STORE = "ringbus-store-complete";

    @Test
    void theFirstReadGivesTheShareSinceTheThreadBeganToRunNotNaN() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            ThreadShares shares = new ThreadShares(ring.bus);

            assertThat(shares.busy(HANDLER)).isBetween(0.0, 1.0);
            assertThat(shares.busy(STORE)).isBetween(0.0, 1.0);
            assertThat(shares.inStore(STORE)).isBetween(0.0, 1.0);
        }
    }

    @Test
    void aThreadThatIsNotRunningReadsZeroAndItsCpuCounterKeepsWhatItUsed() {
        RingbusFixture ring = RingbusFixture.notStarted(b -> b.topology(Topology.COMPACT));
        ThreadShares shares = new ThreadShares(ring.bus);
        assertThat(shares.busy(HANDLER)).as("before the start").isZero();
        assertThat(shares.cpuSeconds(HANDLER)).as("before the start").isZero();
        ring.bus.start();
        ring.sendAndWait(new AccountCommands.Open("a"));
        double used = shares.cpuSeconds(HANDLER);

        ring.close();

        assertThat(used).isPositive();
        assertThat(shares.cpuSeconds(HANDLER)).as("after the end").isEqualTo(used);
    }

    /**
     * A commit that takes 2.5 s, read every 1.05 s: the time in the store is counted while the attempt is in
     * progress, so the window it ends in never holds more than its own length (before: 2.5 s over 1.05 s, 2.4).
     */
    @Test
    void aStoreAttemptLongerThanTheWindowNeverReadsAboveTheWholeWindow() throws InterruptedException {
        SlowCommits commits = new SlowCommits(0);
        try (RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT)
                                                               .transactionManager(commits))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            ThreadShares shares = new ThreadShares(ring.bus);
            List<Double> read = new ArrayList<>();
            read.add(shares.inStore(STORE));
            commits.commitMillis(2_500);
            CompletableFuture<?> slow = CompletableFuture.runAsync(
                    () -> ring.sendAndWait(new AccountCommands.Deposit("a", 1)));
            for (int i = 0; i < 4; i++) {
                Thread.sleep(ThreadShares.MIN_WINDOW_NANOS / 1_000_000 + 50);
                read.add(shares.inStore(STORE));
            }
            slow.orTimeout(20, TimeUnit.SECONDS).join();

            assertThat(read).allSatisfy(share -> assertThat(share).isBetween(0.0, 1.0));
            assertThat(read).as("a window spent waiting on the commit").anySatisfy(
                    share -> assertThat(share).isGreaterThan(0.5));
        }
    }
}
