package io.github.ringbus.spring;

import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.RingbusFixture;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.messaging.GenericMessage;
import org.junit.jupiter.api.Test;

import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** The stage threads' meters: one set per thread, named by its tag, and a loaded stage shows on its own thread. */
class StageThreadMetersTest {

    private final MeterRegistry registry = new SimpleMeterRegistry();

    @Test
    void everyStageThreadHasItsBusyShareAndCpuTimeAndOnlyStoreThreadsTheirTimeInTheStore() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT))) {
            new RingbusMetrics(registry, "bus").bindTo(ring.bus);

            assertThat(registry.find(RingbusMetrics.THREAD_BUSY).gauges())
                    .extracting(gauge -> gauge.getId().getTag("thread"))
                    .containsExactlyInAnyOrder("ringbus-preload-handle", "ringbus-store-complete");
            assertThat(registry.find(RingbusMetrics.THREAD_CPU).functionCounters()).hasSize(2);
            assertThat(registry.find(RingbusMetrics.THREAD_IN_STORE).gauges())
                    .extracting(gauge -> gauge.getId().getTag("thread")).containsExactly("ringbus-store-complete");
            assertThat(registry.find(RingbusMetrics.THREAD_STORE).functionCounters())
                    .extracting(counter -> counter.getId().getTag("thread")).containsExactly("ringbus-store-complete");
        }
    }

    @Test
    void aHandlerThatBurnsCpuShowsAsTheBusiestThreadInTheGauges() {
        try (RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT))) {
            new RingbusMetrics(registry, "bus").bindTo(ring.bus);
            ring.bus.subscribe("burn", message -> {
                long until = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(2);
                while (System.nanoTime() < until) {
                    Thread.onSpinWait();
                }
                return null;
            });
            assertThat(busy("ringbus-preload-handle")).as("the share since the thread began").isBetween(0.0, 1.0);

            long until = System.nanoTime() + ThreadShares.MIN_WINDOW_NANOS + TimeUnit.MILLISECONDS.toNanos(200);
            while (System.nanoTime() < until) {
                ring.sendAndWait(new GenericCommandMessage<>(new GenericMessage<>("burn"), "burn"));
            }

            double handler = busy("ringbus-preload-handle");
            assertThat(handler).isGreaterThan(busy("ringbus-store-complete")).isGreaterThan(0.1);
            assertThat(registry.get(RingbusMetrics.THREAD_CPU).tag("thread", "ringbus-preload-handle")
                               .functionCounter().count()).isGreaterThan(0.1);
        }
    }

    private double busy(String thread) {
        return registry.get(RingbusMetrics.THREAD_BUSY).tag("thread", thread).gauge().value();
    }
}
