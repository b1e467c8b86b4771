package io.github.ringbus.benchmarks;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.messaging.MessageHandler;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What the pipeline itself costs, with no aggregate and no event store work: hand-offs per second through
 * a raw {@link DiamondPipeline} of ringbus's shape (the upper limit), through ringbus with a command
 * handler that does nothing, and through a {@link SimpleCommandBus} with the same handler. Batches of
 * {@value #BATCH} are dispatched and awaited as in {@link ThroughputBenchmark}; one operation is one
 * hand-off.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@OperationsPerInvocation(PipelineOverheadBenchmark.BATCH)
@Fork(value = 1, jvmArgsAppend = {"-Xms8g", "-Xmx8g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class PipelineOverheadBenchmark {

    /** Hand-offs per invocation. */
    static final int BATCH = 1_000;

    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    /** The command every no-op dispatch carries. */
    public record NoOp() {
    }

    /** Where the hand-offs go: the raw pipeline or a bus with a no-op handler. */
    @State(Scope.Benchmark)
    public static class Target {

        @Param({"disruptor-pipeline", "ringbus-noop", "simple-noop"})
        public String target;

        private Sink sink;
        private Runnable shutdown;

        @Setup(Level.Trial)
        public void start() {
            switch (target) {
                case "disruptor-pipeline" -> {
                    DiamondPipeline pipeline = new DiamondPipeline();
                    sink = pipeline::publish;
                    shutdown = pipeline::shutdown;
                }
                case "ringbus-noop" -> useNoOpHandlerOn(RingBusFactory.startStandalone());
                case "simple-noop" -> useNoOpHandlerOn(new StartedBus(SimpleCommandBus.builder().build(), () -> {
                    // a SimpleCommandBus has no threads to stop
                }));
                default -> throw new IllegalArgumentException("No target named '" + target + "'");
            }
        }

        @TearDown(Level.Trial)
        public void shutdown() {
            shutdown.run();
        }

        private void useNoOpHandlerOn(StartedBus started) {
            CommandBus bus = started.bus();
            MessageHandler<CommandMessage<?>> doNothing = command -> null;
            bus.subscribe(NoOp.class.getName(), doNothing);
            NoOp noOp = new NoOp();
            sink = (value, completion) -> bus.dispatch(asCommandMessage(noOp), completion);
            shutdown = started.shutdown();
        }
    }

    /** One dispatching thread's completion, reused from batch to batch. */
    @State(Scope.Thread)
    public static class Dispatcher {
        final BatchCompletion completion = new BatchCompletion(TIMEOUT_NANOS);
    }

    @Benchmark
    @Threads(1)
    public void oneDispatcher(Target target, Dispatcher dispatcher) {
        handOffBatch(target.sink, dispatcher.completion);
    }

    @Benchmark
    @Threads(4)
    public void fourDispatchers(Target target, Dispatcher dispatcher) {
        handOffBatch(target.sink, dispatcher.completion);
    }

    private static void handOffBatch(Sink sink, BatchCompletion completion) {
        completion.expect(BATCH);
        for (long value = 0; value < BATCH; value++) {
            sink.send(value, completion);
        }
        completion.await();
    }

    /** Takes one hand-off. */
    @FunctionalInterface
    private interface Sink {
        void send(long value, BatchCompletion completion);
    }
}
