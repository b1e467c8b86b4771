package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.SlowCommits;
import io.github.ringbus.fixtures.StageThreads;
import org.junit.jupiter.api.Test;

import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The stage threads' clocks ({@link RingCommandBus#stageThreadTimes()}): a load on one stage shows on that stage's
 * thread, a store that waits on its server shows as time in the store rather than CPU, and an idle ring costs
 * (almost) nothing.
 */
class StageThreadTimesTest {

    @Test
    void theThreadsAreNamedWhenTheBusIsBuiltAndUnmeasuredBeforeItStarts() {
        try (RingbusFixture ring = RingbusFixture.notStarted(b -> b.topology(Topology.COMPACT))) {
            assertThat(ring.bus.stageThreadTimes())
                    .extracting(StageThreadTimes::thread)
                    .containsExactly("ringbus-preload-handle", "ringbus-store-complete");
            assertThat(ring.bus.stageThreadTimes()).allMatch(times -> times.cpuNanos() == -1);
            assertThat(ring.bus.stageThreadTimes()).extracting(StageThreadTimes::stores).containsExactly(false, true);
        }
    }

    @Test
    void aHandlerThatBurnsCpuMakesItsHandlerThreadTheBusiestStageThread() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.FULL).handlerThreads(1))) {
            // 2 ms of the handler thread's own CPU time, not of the wall clock: on a busy machine a thread spinning
            // for 2 ms of wall time may get much less of a core (a CI run read 0.52 s for 300 of them).
            java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
            ring.bus.subscribe("burn", message -> {
                long until = cpu.getCurrentThreadCpuTime() + TimeUnit.MILLISECONDS.toNanos(2);
                while (cpu.getCurrentThreadCpuTime() < until) {
                    Thread.onSpinWait();
                }
                return null;
            });
            Map<String, StageThreadTimes> before = byThread(ring.bus.stageThreadTimes());

            for (int i = 0; i < 300; i++) {
                ring.sendAndWait(new org.axonframework.commandhandling.GenericCommandMessage<>(
                        new org.axonframework.messaging.GenericMessage<>("burn"), "burn"));
            }

            List<StageThreadTimes> after = ring.bus.stageThreadTimes();
            StageThreadTimes busiest = after.stream().max(Comparator.comparingLong(
                    times -> times.cpuNanos() - before.get(times.thread()).cpuNanos())).orElseThrow();
            assertThat(StageThreads.handles(busiest.thread())).as(busiest.thread()).isTrue();
            // 300 commands of 2 ms each: at least 0.6 s of the handler thread's CPU.
            assertThat(busiest.cpuNanos() - before.get(busiest.thread()).cpuNanos())
                    .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(550));
        }
    }

    @Test
    void aStoreThatWaitsOnItsServerShowsAsTimeInTheStoreNotAsCpu() {
        SlowCommits slowCommits = new SlowCommits(10);
        try (RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT)
                                                               .transactionManager(slowCommits))) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            Map<String, StageThreadTimes> before = byThread(ring.bus.stageThreadTimes());

            for (int i = 0; i < 30; i++) {
                ring.sendAndWait(new AccountCommands.Deposit("a", 1));
            }

            StageThreadTimes store = byThread(ring.bus.stageThreadTimes()).get("ringbus-store-complete");
            long inStore = store.inStoreNanos() - before.get(store.thread()).inStoreNanos();
            long cpu = store.cpuNanos() - before.get(store.thread()).cpuNanos();
            // 30 commits of 10 ms: at least 300 ms in the store, of which the thread slept nearly all.
            assertThat(inStore).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(300));
            assertThat(cpu).isLessThan(inStore / 2);
            assertThat(byThread(ring.bus.stageThreadTimes()).get("ringbus-preload-handle").inStoreNanos()).isZero();
        }
    }

    @Test
    void anIdleRingUsesLessThanOnePercentOfACore() throws InterruptedException {
        try (RingbusFixture ring = RingbusFixture.started()) {
            ring.sendAndWait(new AccountCommands.Open("a"));
            Thread.sleep(500); // past the wait strategy's spinning after the last command
            long before = totalCpu(ring.bus.stageThreadTimes());
            long start = System.nanoTime();

            Thread.sleep(3_000);

            long used = totalCpu(ring.bus.stageThreadTimes()) - before;
            assertThat((double) used / (System.nanoTime() - start)).isLessThan(0.01);
        }
    }

    private static long totalCpu(List<StageThreadTimes> threads) {
        return threads.stream().mapToLong(StageThreadTimes::cpuNanos).sum();
    }

    private static Map<String, StageThreadTimes> byThread(List<StageThreadTimes> threads) {
        Map<String, StageThreadTimes> byName = new HashMap<>();
        threads.forEach(times -> byName.put(times.thread(), times));
        return byName;
    }
}
