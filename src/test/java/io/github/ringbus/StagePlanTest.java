package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The threads a started bus runs are named after the stages of its plan ({@link StagePlan}), in every shape: the
 * names shutdown and the logs rely on cannot drift from the wiring.
 */
class StagePlanTest {

    static Stream<Arguments> shapes() {
        return Stream.of(
                Arguments.of(Topology.COMPACT, 1, 1, PublishMode.PARALLEL,
                             List.of("preload-handle", "store-complete")),
                Arguments.of(Topology.FULL, 2, 1, PublishMode.IN_TRANSACTION,
                             List.of("preload", "handle-0", "handle-1", "store", "complete")),
                Arguments.of(Topology.FULL, 1, 1, PublishMode.PARALLEL,
                             List.of("preload", "handle-0", "store", "publish", "complete")),
                Arguments.of(Topology.FULL, 1, 1, PublishMode.AFTER_STORE,
                             List.of("preload", "handle-0", "store", "publish", "complete")),
                Arguments.of(Topology.FULL, 2, 3, PublishMode.IN_TRANSACTION,
                             List.of("preload", "handle-0", "handle-1", "store-complete-0", "store-complete-1",
                                     "store-complete-2")));
    }

    private static RingCommandBus.Builder shape(Topology topology, int handlerThreads, int storeThreads,
                                                PublishMode publishMode) {
        return RingCommandBus.builder()
                             .eventStore(RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build())
                             .topology(topology)
                             .handlerThreads(handlerThreads)
                             .storeThreads(storeThreads)
                             .publishMode(publishMode);
    }

    /**
     * Every shape a bus can take (topology x handler threads x store threads x publish mode), each with the whole graph
     * of its stage threads and what follows from it: two shapes cannot pass with one expectation.
     */
    static Stream<Arguments> graphs() {
        String inTx = "; subscribers in the store's transaction; re-runs allowed";
        String after = "; subscribers after the store; re-runs allowed";
        String shards = "preload -> handle-0 -> (store-complete-0 || store-complete-1 || store-complete-2)";
        String shards2 = "preload -> (handle-0 || handle-1) -> (store-complete-0 || store-complete-1 || store-complete-2)";
        return Stream.of(
                Arguments.of(Topology.COMPACT, 1, 1, PublishMode.IN_TRANSACTION, "preload-handle -> store-complete" + inTx),
                Arguments.of(Topology.COMPACT, 1, 1, PublishMode.PARALLEL, "preload-handle -> store-complete" + after),
                Arguments.of(Topology.COMPACT, 1, 1, PublishMode.AFTER_STORE, "preload-handle -> store-complete" + after),
                Arguments.of(Topology.FULL, 1, 1, PublishMode.IN_TRANSACTION,
                             "preload -> handle-0 -> store -> complete" + inTx),
                Arguments.of(Topology.FULL, 1, 1, PublishMode.PARALLEL,
                             "preload -> handle-0 -> (store || publish) -> complete; subscribers beside the store; "
                                     + "re-runs never"),
                Arguments.of(Topology.FULL, 1, 1, PublishMode.AFTER_STORE,
                             "preload -> handle-0 -> store -> publish -> complete" + after),
                Arguments.of(Topology.FULL, 2, 1, PublishMode.IN_TRANSACTION,
                             "preload -> (handle-0 || handle-1) -> store -> complete" + inTx),
                Arguments.of(Topology.FULL, 2, 1, PublishMode.PARALLEL,
                             "preload -> (handle-0 || handle-1) -> (store || publish) -> complete; subscribers beside "
                                     + "the store; re-runs never"),
                Arguments.of(Topology.FULL, 2, 1, PublishMode.AFTER_STORE,
                             "preload -> (handle-0 || handle-1) -> store -> publish -> complete" + after),
                Arguments.of(Topology.FULL, 1, 3, PublishMode.IN_TRANSACTION, shards + inTx),
                Arguments.of(Topology.FULL, 1, 3, PublishMode.PARALLEL, shards + after),
                Arguments.of(Topology.FULL, 1, 3, PublishMode.AFTER_STORE, shards + after),
                Arguments.of(Topology.FULL, 2, 3, PublishMode.IN_TRANSACTION, shards2 + inTx),
                Arguments.of(Topology.FULL, 2, 3, PublishMode.PARALLEL, shards2 + after),
                Arguments.of(Topology.FULL, 2, 3, PublishMode.AFTER_STORE, shards2 + after));
    }

    @ParameterizedTest(name = "{0}, {1} handler / {2} store thread(s), {3}")
    @MethodSource("graphs")
    void everyShapeWiresItsWholeGraph(Topology topology, int handlerThreads, int storeThreads,
                                      PublishMode publishMode, String graph) {
        RingCommandBus bus = shape(topology, handlerThreads, storeThreads, publishMode).build();

        assertThat(bus.stageShape()).isEqualTo(graph);
    }

    @ParameterizedTest(name = "{0}, {1} handler / {2} store thread(s), {3}")
    @MethodSource("shapes")
    void everyStageThreadIsNamedAfterItsStage(Topology topology, int handlerThreads, int storeThreads,
                                              PublishMode publishMode, List<String> stages) {
        String prefix = "plan-" + topology + "-" + handlerThreads + "-" + storeThreads + "-" + publishMode;
        RingCommandBus bus = shape(topology, handlerThreads, storeThreads, publishMode).threadNamePrefix(prefix).build();
        bus.registerAggregate(Account.class);
        bus.start();
        try {
            Set<String> running = new TreeSet<>();
            for (Thread thread : Thread.getAllStackTraces().keySet()) {
                // Beside the stage threads: the callback thread, which runs no stage.
                if (thread.getName().startsWith(prefix + "-") && !thread.getName().endsWith("-callbacks")) {
                    running.add(thread.getName().substring(prefix.length() + 1));
                }
            }
            assertThat(running).as("stage threads of the started bus").containsExactlyInAnyOrderElementsOf(stages);
        } finally {
            bus.shutdown();
        }
    }
}
