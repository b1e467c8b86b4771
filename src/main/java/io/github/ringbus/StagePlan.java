package io.github.ringbus;

import com.lmax.disruptor.BatchEventProcessor;
import com.lmax.disruptor.BatchEventProcessorBuilder;
import com.lmax.disruptor.ExceptionHandler;
import com.lmax.disruptor.SequenceBarrier;
import com.lmax.disruptor.dsl.EventProcessorFactory;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.EventHandlerGroup;

import java.util.ArrayList;
import java.util.List;

/**
 * The shape of the ring, stated once: its steps in order, each step's stages running side by side (one thread each)
 * after every stage of the step before, as the Disruptor DSL's {@code handleEventsWith(...).then(...)} reads. Each
 * stage carries its thread's name, so the wiring and the thread names cannot drift apart, and says whether it stores
 * (appends events or hands them to subscribers), which shutdown needs to know.
 * <p>
 * Immutable; built once per bus by {@link Pipeline}.
 */
final class StagePlan {

    /**
     * One stage: the handler a Disruptor thread runs, that thread's name (without the bus's prefix); for a handler
     * thread, the {@link ReRuns} whose {@link ReRunBarrier} it waits on, and its segment (else null and -1).
     */
    record Stage(String name, EventHandler<CommandSlot> handler, boolean stores, ReRuns reRuns, int segment) {
    }

    /**
     * What follows from the ring's shape, decided here once and read by those who act on it: the pipeline (which
     * stages it wires), {@link ReRuns} (whether a command may be handled again), {@link NestedDispatch} (whether a
     * handler thread may run a command for another aggregate in place) and the shape the bus reports.
     *
     * @param handlerThreadPreloads true when the one handler thread also preloads ({@link Topology#COMPACT}), and so
     *                              owns every aggregate and the cache: a command it waits for may run in place on it
     * @param storeCompletes        true when each store thread completes its own commands (COMPACT, or several store
     *                              threads); false when a complete stage of its own follows the store
     * @param subscribers           where the event store's subscribers are called
     * @param reRunsAllowed         false when a publish stage runs beside the store: it may have handed a command's
     *                              first events to subscribers, so the command may never be handled again
     */
    record Facts(boolean handlerThreadPreloads, boolean storeCompletes, Subscribers subscribers,
                 boolean reRunsAllowed) {

        /** Where the event store's subscribers are called. */
        enum Subscribers {
            /** By the store stage, inside its transaction ({@code IN_TRANSACTION}, or not a RingEventStore). */
            IN_THE_STORES_TRANSACTION("in the store's transaction"),
            /** By a publish stage after the store, or by each store thread after its own store. */
            AFTER_THE_STORE("after the store"),
            /** By a publish stage side by side with the store ({@code PARALLEL}, FULL, one store thread). */
            BESIDE_THE_STORE("beside the store");

            private final String words;

            Subscribers(String words) {
                this.words = words;
            }
        }

        /**
         * @param topology           the threads' topology
         * @param storeThreads       the number of store threads
         * @param publishMode        where the settings ask the subscribers to be called
         * @param ringEventStore     true when the event store is a {@link RingEventStore} (append and publish apart)
         * @return what follows from that shape
         */
        static Facts of(Topology topology, int storeThreads, PublishMode publishMode, boolean ringEventStore) {
            boolean compact = topology == Topology.COMPACT;
            boolean storeCompletes = compact || storeThreads > 1;
            Subscribers subscribers;
            if (!ringEventStore || publishMode == PublishMode.IN_TRANSACTION) {
                subscribers = Subscribers.IN_THE_STORES_TRANSACTION;
            } else if (publishMode == PublishMode.AFTER_STORE || storeCompletes) {
                subscribers = Subscribers.AFTER_THE_STORE;
            } else {
                subscribers = Subscribers.BESIDE_THE_STORE;
            }
            return new Facts(compact, storeCompletes, subscribers, subscribers != Subscribers.BESIDE_THE_STORE);
        }

        /** @return true when a publish stage of its own hands events to the subscribers */
        boolean publishesSeparately() {
            return subscribers != Subscribers.IN_THE_STORES_TRANSACTION;
        }

        @Override
        public String toString() {
            return "subscribers " + subscribers.words + "; re-runs " + (reRunsAllowed ? "allowed" : "never");
        }
    }

    private final List<List<Stage>> steps;

    private StagePlan(List<List<Stage>> steps) {
        this.steps = steps.stream().map(List::copyOf).toList();
    }

    /** A plan that starts with the given step. */
    static StagePlan first(Stage... step) {
        return new StagePlan(List.of(List.of(step)));
    }

    /** This plan followed by a step whose stages run side by side. */
    StagePlan then(Stage... step) {
        return then(List.of(step));
    }

    /** This plan followed by a step whose stages run side by side. */
    StagePlan then(List<Stage> step) {
        List<List<Stage>> next = new ArrayList<>(steps);
        next.add(step);
        return new StagePlan(next);
    }

    static Stage stage(String name, EventHandler<CommandSlot> handler) {
        return new Stage(name, handler, false, null, -1);
    }

    static Stage storing(String name, EventHandler<CommandSlot> handler) {
        return new Stage(name, handler, true, null, -1);
    }

    /** A stage that handles the commands of {@code segment}: it waits on a barrier through which it gets re-runs. */
    static Stage handling(String name, EventHandler<CommandSlot> handler, ReRuns reRuns, int segment) {
        return new Stage(name, handler, false, reRuns, segment);
    }

    /**
     * The stage threads' names in the order the Disruptor starts them (step by step, each step's stages in order),
     * which is the order {@link PipelineThreads} hands the names out in.
     */
    List<String> threadNames(String prefix) {
        return steps.stream().flatMap(List::stream).map(stage -> prefix + "-" + stage.name()).toList();
    }

    /** The names of the threads that store: while one of them runs, a command may still be stored. */
    List<String> storingThreadNames(String prefix) {
        return steps.stream().flatMap(List::stream).filter(Stage::stores)
                    .map(stage -> prefix + "-" + stage.name()).toList();
    }

    /**
     * Wires the steps into the Disruptor, in order. A step of handler threads gets processors built here, each on a
     * {@link ReRunBarrier} of its own around the ring's barrier (the Disruptor's own would share one barrier per
     * step), with the given exception handler, as the Disruptor gives the others.
     */
    @SuppressWarnings("unchecked")
    void wireInto(Disruptor<CommandSlot> disruptor, ExceptionHandler<? super CommandSlot> exceptionHandler) {
        EventHandlerGroup<CommandSlot> group = null;
        for (List<Stage> step : steps) {
            if (step.stream().anyMatch(stage -> stage.reRuns() != null)) {
                EventProcessorFactory<CommandSlot>[] processors = step.stream()
                        .map(stage -> processorOf(stage, exceptionHandler)).toArray(EventProcessorFactory[]::new);
                group = group == null ? disruptor.handleEventsWith(processors) : group.then(processors);
            } else {
                EventHandler<CommandSlot>[] handlers = step.stream().map(Stage::handler).toArray(EventHandler[]::new);
                group = group == null ? disruptor.handleEventsWith(handlers) : group.then(handlers);
            }
        }
    }

    private static EventProcessorFactory<CommandSlot> processorOf(Stage stage,
                                                                  ExceptionHandler<? super CommandSlot> exceptions) {
        return (ring, barrierSequences) -> {
            SequenceBarrier barrier = ring.newBarrier(barrierSequences);
            if (stage.reRuns() != null) {
                barrier = stage.reRuns().barrierFor(stage.segment(), barrier);
            }
            BatchEventProcessor<CommandSlot> processor =
                    new BatchEventProcessorBuilder().build(ring, barrier, stage.handler());
            processor.setExceptionHandler(exceptions);
            return processor;
        };
    }

    @Override
    public String toString() {
        StringBuilder shape = new StringBuilder();
        for (List<Stage> step : steps) {
            if (!shape.isEmpty()) {
                shape.append(" -> ");
            }
            List<String> names = step.stream().map(Stage::name).toList();
            shape.append(names.size() == 1 ? names.get(0) : "(" + String.join(" || ", names) + ")");
        }
        return shape.toString();
    }
}
