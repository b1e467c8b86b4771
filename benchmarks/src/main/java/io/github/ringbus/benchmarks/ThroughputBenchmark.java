package io.github.ringbus.benchmarks;

import io.github.ringbus.benchmarks.report.Utilization;
import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandBus;
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
import org.openjdk.jmh.infra.ThreadParams;

/**
 * Commands per second through each command bus: every invocation dispatches a {@link DepositBatch} of
 * {@value DepositBatch#SIZE} Deposit commands over the {@value BankApplication#ACCOUNTS} cached accounts
 * and waits for all their callbacks, from one or from four dispatching threads. One operation is one
 * command.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@OperationsPerInvocation(DepositBatch.SIZE)
@Fork(value = 1, jvmArgsAppend = {"-Xms8g", "-Xmx8g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class ThroughputBenchmark {

    /** The application under test, on the bus named by the {@code bus} parameter. */
    @State(Scope.Benchmark)
    public static class Bank {

        @Param({"simple", "async", "axon-disruptor", "axon-disruptor-cached", "ringbus", "ringbus-tuned"})
        public String bus;

        BankApplication application;

        @Setup(Level.Trial)
        public void start() {
            application = BankApplication.start(BusChoice.named(bus));
        }

        /** For {@code -prof io.github.ringbus.benchmarks.report.Utilization}: the stage threads end with the trial. */
        @Setup(Level.Iteration)
        public void iterationBegins() {
            Utilization.iterationBegins();
        }

        @TearDown(Level.Iteration)
        public void iterationEnds() {
            Utilization.iterationEnds();
        }

        @TearDown(Level.Trial)
        public void shutdown() {
            application.shutdown();
        }

        CommandBus commandBus() {
            return application.commandBus();
        }
    }

    /** One dispatching thread's batch of commands. */
    @State(Scope.Thread)
    public static class Dispatcher {

        DepositBatch batch;

        @Setup(Level.Trial)
        public void prepare(ThreadParams threadParams) {
            batch = new DepositBatch(threadParams.getThreadIndex());
        }
    }

    @Benchmark
    @Threads(1)
    public void oneDispatcher(Bank bank, Dispatcher dispatcher) {
        dispatcher.batch.dispatchTo(bank.commandBus());
    }

    @Benchmark
    @Threads(4)
    public void fourDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.batch.dispatchTo(bank.commandBus());
    }

    /** For machines of 16 cores and more: not in the main job on 2 cores ({@code benchmarks/run} selects by name). */
    @Benchmark
    @Threads(16)
    public void sixteenDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.batch.dispatchTo(bank.commandBus());
    }
}
