package io.github.ringbus.benchmarks;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import io.github.ringbus.benchmarks.postgres.DurablePostgres;
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
 * A creation-only load (registering new aggregates): every command opens an account that did not exist, so no bus
 * finds it in a cache. Each invocation dispatches {@value #BATCH} {@link Account.OpenAccount} commands with fresh
 * identifiers from one dispatching thread and waits for all their callbacks; one operation is one command.
 * {@code storage}: {@code memory} is Axon's in-memory engine, {@code postgres} Axon's JDBC engine on an embedded
 * PostgreSQL with {@code fsync=on} and {@code synchronous_commit=on}, whose unique key on (aggregate, sequence)
 * catches a second creation of one aggregate.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@OperationsPerInvocation(CreationBenchmark.BATCH)
@Fork(value = 1, jvmArgsAppend = {"-Xms4g", "-Xmx4g"})
@Warmup(iterations = 2, time = 3)
@Measurement(iterations = 4, time = 3)
public class CreationBenchmark {

    /** Commands per invocation. */
    public static final int BATCH = 200;

    /** The application under test, on the bus and storage named by the parameters. */
    @State(Scope.Benchmark)
    public static class Bank {

        @Param({"simple", "ringbus"})
        public String bus;

        @Param({"memory", "postgres"})
        public String storage;

        private DurablePostgres postgres;
        private BankApplication application;

        @Setup(Level.Trial)
        public void start() {
            if (storage.equals("postgres")) {
                postgres = DurablePostgres.start(16);
                application = BankApplication.start(BusChoice.named(bus), postgres.eventStorage());
            } else if (storage.equals("memory")) {
                application = BankApplication.start(BusChoice.named(bus));
            } else {
                throw new IllegalArgumentException("storage must be memory or postgres, not [" + storage + "]");
            }
        }

        @TearDown(Level.Trial)
        public void shutdown() {
            try {
                application.shutdown();
            } finally {
                if (postgres != null) {
                    postgres.close();
                }
            }
        }

        CommandBus commandBus() {
            return application.commandBus();
        }
    }

    /** One dispatching thread: fresh account identifiers of its own. */
    @State(Scope.Thread)
    public static class Dispatcher {

        private final BatchCompletion completion = new BatchCompletion(TimeUnit.SECONDS.toNanos(60));
        private String prefix;
        private long next;

        @Setup(Level.Trial)
        public void prepare(ThreadParams threadParams) {
            prefix = "new-" + threadParams.getThreadIndex() + "-";
        }

        void openAccounts(CommandBus bus) {
            completion.expect(BATCH);
            for (int i = 0; i < BATCH; i++) {
                bus.dispatch(asCommandMessage(new Account.OpenAccount(prefix + next++)), completion);
            }
            completion.await();
        }
    }

    @Benchmark
    @Threads(1)
    public void oneDispatcher(Bank bank, Dispatcher dispatcher) {
        dispatcher.openAccounts(bank.commandBus());
    }

    @Benchmark
    @Threads(4)
    public void fourDispatchers(Bank bank, Dispatcher dispatcher) {
        dispatcher.openAccounts(bank.commandBus());
    }
}
