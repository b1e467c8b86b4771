package io.github.ringbus.behaviour;

import io.github.ringbus.PipelineWaitException;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.Topology;
import io.github.ringbus.behaviour.Relay.Add;
import io.github.ringbus.behaviour.Relay.Added;
import io.github.ringbus.behaviour.Relay.Create;
import io.github.ringbus.behaviour.Relay.WaitCatching;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.DomainEventMessage;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Handlers that wait for other aggregates' commands, run in place, while dispatchers send those aggregates commands
 * of their own into the ring at the same time (the commands that may be ahead of a nested one). Invariants: every
 * acknowledged add is stored exactly once, nothing refused or failed is stored, each aggregate's sequence numbers have
 * no gap, each dispatcher's adds to one aggregate are stored in the order it sent them, and the aggregate the ring
 * holds in memory equals what the store holds.
 */
class WaitingForAnotherAggregateStressTest {

    private static final int TARGETS = 8;
    private static final int OUTERS = 8;
    private static final int DISPATCHERS = 3;
    private static final int ROUNDS = 3_000;

    @Test
    void nestedCommandsOnOtherAggregatesBesideDirectOnesLoseNothingAndKeepEachDispatchersOrder() throws Exception {
        RingbusFixture ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT).handlerThreads(1).ringSize(64));
        try {
            ((RingCommandBus) ring.bus).registerAggregate(Relay.class);
            CommandGateway gateway = DefaultCommandGateway.builder().commandBus(ring.bus).build();
            Relay.gateway = gateway;
            for (int i = 0; i < TARGETS; i++) {
                gateway.sendAndWait(new Create(target(i)));
            }
            for (int i = 0; i < OUTERS; i++) {
                gateway.sendAndWait(new Create(outer(i)));
            }

            // value = dispatcher * 10^9 + its counter; dispatcher DISPATCHERS sends the nested adds
            Set<Long> acknowledged = ConcurrentHashMap.newKeySet();
            Set<Long> notStored = ConcurrentHashMap.newKeySet();
            List<CompletableFuture<Void>> dispatchers = new ArrayList<>();
            for (int d = 0; d <= DISPATCHERS; d++) {
                int dispatcher = d;
                dispatchers.add(CompletableFuture.runAsync(() -> {
                    SplittableRandom random = new SplittableRandom(dispatcher);
                    List<CompletableFuture<Object>> inFlight = new ArrayList<>();
                    for (long n = 0; n < ROUNDS; n++) {
                        long value = dispatcher * 1_000_000_000L + n;
                        String target = target(random.nextInt(TARGETS));
                        if (dispatcher < DISPATCHERS) {
                            inFlight.add(gateway.send(new Add(target, value)).thenApply(r -> {
                                acknowledged.add(value);
                                return r;
                            }));
                        } else {
                            Object nested = gateway.sendAndWait(
                                    new WaitCatching(outer(random.nextInt(OUTERS)), new Add(target, value)));
                            if (nested instanceof PipelineWaitException) {
                                notStored.add(value);
                            } else if (nested instanceof Throwable failure) {
                                throw new AssertionError("a nested add failed", failure);
                            } else {
                                acknowledged.add(value);
                            }
                        }
                    }
                    inFlight.forEach(CompletableFuture::join);
                }));
            }
            CompletableFuture.allOf(dispatchers.toArray(new CompletableFuture[0])).get(120, TimeUnit.SECONDS);

            List<Long> storedValues = new ArrayList<>();
            for (int i = 0; i < TARGETS; i++) {
                List<? extends DomainEventMessage<?>> events = ring.storedEvents(target(i));
                assertThat(events.stream().map(DomainEventMessage::getSequenceNumber))
                        .as("sequence numbers of %s", target(i))
                        .containsExactlyElementsOf(LongStream.range(0, events.size()).boxed().toList());
                List<Long> values = events.stream().map(DomainEventMessage::getPayload)
                                          .filter(Added.class::isInstance).map(p -> ((Added) p).value())
                                          .collect(Collectors.toList());
                for (int d = 0; d <= DISPATCHERS; d++) {
                    long from = d * 1_000_000_000L;
                    List<Long> own = values.stream().filter(v -> v >= from && v < from + 1_000_000_000L).toList();
                    assertThat(own).as("dispatcher %d's adds to %s, in its order", d, target(i)).isSorted();
                }
                assertThat(gateway.<List<Long>>sendAndWait(new Add(target(i), -1)))
                        .as("%s in the ring's memory against the store", target(i))
                        .isEqualTo(concat(values, -1L));
                storedValues.addAll(values);
            }
            assertThat(storedValues).as("stored adds").doesNotHaveDuplicates()
                                    .containsExactlyInAnyOrderElementsOf(acknowledged);
            assertThat(acknowledged).as("nested adds that ran in place")
                                    .anyMatch(v -> v >= DISPATCHERS * 1_000_000_000L);
            assertThat(storedValues).as("refused nested adds").doesNotContainAnyElementsOf(notStored);
            System.out.printf("nested adds in place: %d, refused (a command of their aggregate ahead): %d%n",
                              acknowledged.stream().filter(v -> v >= DISPATCHERS * 1_000_000_000L).count(),
                              notStored.size());
        } finally {
            Relay.gateway = null;
            ring.close();
        }
    }

    private static List<Long> concat(List<Long> values, long last) {
        List<Long> all = new ArrayList<>(values);
        all.add(last);
        return all;
    }

    private static String target(int i) {
        return "target-" + i;
    }

    private static String outer(int i) {
        return "outer-" + i;
    }
}
