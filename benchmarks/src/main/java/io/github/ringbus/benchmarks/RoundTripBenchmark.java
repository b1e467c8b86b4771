package io.github.ringbus.benchmarks;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * What one web request feels: a single {@code sendAndWait} round trip from one thread, the bus otherwise idle.
 * Each operation dispatches one {@link Account.Deposit} to a cached account with a {@link FutureCallback} and waits
 * for its result, as Axon's {@code CommandGateway.sendAndWait} does. {@code SampleTime}: JMH records the time of
 * (nearly) every operation, so the result has the median and the tail (p99, p99.9), not only a mean.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms4g", "-Xmx4g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class RoundTripBenchmark {

    /** The application under test, on the bus named by the {@code bus} parameter. */
    @State(Scope.Benchmark)
    public static class Bank {

        @Param({"simple", "axon-disruptor-cached", "ringbus"})
        public String bus;

        /**
         * {@code off}, or {@code stages}: each of the bus's stage threads (named {@code ringbus-*}) pinned to a core of
         * its own, the dispatching thread to the cores left ({@link ThreadPinning}, Linux, more cores than stage
         * threads). A measurement of whether pinning pays, not a setting ringbus offers.
         */
        @Param({"off"})
        public String pinning;

        BankApplication application;
        DepositBatch deposits;
        long next;

        @Setup(Level.Trial)
        public void start() {
            application = BankApplication.start(BusChoice.named(bus));
            deposits = new DepositBatch(0);
            if (pinning.equals("stages")) {
                // Only ringbus has stage threads of its own; the other buses run on the caller.
                System.out.println("pinned: " + (bus.startsWith("ringbus")
                        ? ThreadPinning.pinStagesAndCaller("ringbus-") : "nothing (" + bus + " has no stage threads)"));
            } else if (!pinning.equals("off")) {
                throw new IllegalArgumentException("pinning must be off or stages, not " + pinning);
            }
        }

        @TearDown(Level.Trial)
        public void shutdown() {
            application.shutdown();
        }
    }

    @Benchmark
    @Threads(1)
    public Object sendAndWait(Bank bank) {
        FutureCallback<Object, Object> result = new FutureCallback<>();
        bank.application.commandBus().dispatch(asCommandMessage(bank.deposits.deposit(bank.next++)), result);
        CommandResultMessage<?> message = result.getResult();
        if (message.isExceptional()) {
            throw new IllegalStateException("A command failed", message.exceptionResult());
        }
        return message.getPayload();
    }
}
