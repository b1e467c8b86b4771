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
