package io.github.ringbus;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link WaitStrategyChoice#BLOCKING}: a stage thread uses no CPU while it waits, neither for a dispatcher (it blocks)
 * nor for an earlier stage that is still at work (it parks). A stage that spun there would take the core from the
 * stage it waits for: on 2 cores that made the seeded torture run at 400-550 commands/s.
 */
class BlockingWaitStrategyTest {

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final CountDownLatch release = new CountDownLatch(1);
    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        release.countDown();
        if (ring != null) {
            ring.close();
        }
    }

    @Test
    void stagesWaitingBehindAHandlerAtWorkUseAlmostNoCpu() throws Exception {
        ring = RingbusFixture.started(b -> b.waitStrategy(WaitStrategyChoice.BLOCKING).topology(Topology.FULL)
                                           .handlerThreads(1).publishMode(PublishMode.PARALLEL)
                                           .threadNamePrefix("blocking-busy"));
        ring.assertStillHandlesValidCommands();
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        Outcome held = ring.send(blockCommand("held"));
        Thread.sleep(50); // the command reaches the handler; the later stages now wait for it
        List<Thread> waiting = stageThreads("blocking-busy-store", "blocking-busy-publish", "blocking-busy-complete");
        long cpuBefore = cpuNanos(waiting);
        long wallBefore = System.nanoTime();

        Thread.sleep(500);

        long cpu = cpuNanos(waiting) - cpuBefore;
        long wall = System.nanoTime() - wallBefore;
        release.countDown();
        assertThat(held.awaitSuccess()).isEqualTo("held");
        assertThat((double) cpu / (waiting.size() * wall))
                .as("share of a core each waiting stage thread used (%,d ns CPU in %,d ns)", cpu, wall)
                .isLessThan(0.1);
    }

    @Test
    void everyStageThreadOfAnIdleBusBlocks() throws Exception {
        ring = RingbusFixture.started(b -> b.waitStrategy(WaitStrategyChoice.BLOCKING).topology(Topology.FULL)
                                           .handlerThreads(1).threadNamePrefix("blocking-idle"));
        ring.assertStillHandlesValidCommands();

        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<String> notBlocked;
        do {
            Thread.sleep(10);
            notBlocked = stageThreads("blocking-idle-preload", "blocking-idle-handle-0", "blocking-idle-store",
                                      "blocking-idle-complete").stream()
                    .filter(thread -> thread.getState() != Thread.State.WAITING)
                    .map(thread -> thread.getName() + " " + thread.getState())
                    .collect(Collectors.toList());
        } while (!notBlocked.isEmpty() && System.nanoTime() - deadline < 0);

        assertThat(notBlocked).as("stage threads not blocked").isEmpty();
    }

    private static List<Thread> stageThreads(String... names) {
        List<String> wanted = List.of(names);
        List<Thread> found = Thread.getAllStackTraces().keySet().stream()
                                   .filter(thread -> wanted.contains(thread.getName()))
                                   .collect(Collectors.toList());
        assertThat(found).as("live stage threads %s", wanted).hasSize(names.length);
        return found;
    }

    private static long cpuNanos(List<Thread> threads) {
        long sum = 0;
        for (Thread thread : threads) {
            sum += THREADS.getThreadCpuTime(thread.getId());
        }
        return sum;
    }
}
