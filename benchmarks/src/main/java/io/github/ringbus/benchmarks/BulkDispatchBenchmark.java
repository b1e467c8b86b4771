package io.github.ringbus.benchmarks;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.benchmarks.postgres.DurablePostgres;
import java.util.concurrent.TimeUnit;
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
 * A bulk of {@value DepositBatch#SIZE} deposits (one per account) sent to ringbus (default settings) at once with
 * {@link RingCommandBus#dispatchAll}, against the same commands sent one {@code dispatch} at a time, each waited for
 * to the last callback; in memory and on durable PostgreSQL (embedded, {@code fsync=on}). One operation is one
 * command. What the bulk saves is the per-command claim and publish on the ring (one each per chunk of up to 256
 * commands) and the lifecycle's gate (one per call).
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@OperationsPerInvocation(DepositBatch.SIZE)
@Fork(value = 1, jvmArgsAppend = {"-Xms8g", "-Xmx8g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class BulkDispatchBenchmark {

    /** The application on ringbus, its events in memory or on durable PostgreSQL. */
    @State(Scope.Benchmark)
    public static class Bank {

        @Param({"memory", "postgres"})
        public String storage;

        private DurablePostgres postgres;
        private BankApplication application;

        @Setup(Level.Trial)
        public void start() {
            if (storage.equals("postgres")) {
                postgres = DurablePostgres.start(8);
                application = BankApplication.start(BusChoice.named("ringbus"), postgres.eventStorage());
            } else {
                application = BankApplication.start(BusChoice.named("ringbus"));
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
    }

    /** One dispatching thread's batch of commands. */
    @State(Scope.Thread)
    public static class Batch {
        DepositBatch deposits;

        @Setup(Level.Trial)
        public void prepare() {
            deposits = new DepositBatch((int) Thread.currentThread().getId());
        }
    }

    @Benchmark
    @Threads(1)
    public void oneByOne(Bank bank, Batch batch) {
        batch.deposits.dispatchTo(bank.application.commandBus());
    }

    @Benchmark
    @Threads(1)
    public void bulk(Bank bank, Batch batch) {
        batch.deposits.dispatchAllTo((RingCommandBus) bank.application.commandBus());
    }
}
