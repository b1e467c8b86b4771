package io.github.ringbus.benchmarks;

import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.EventSourcedAggregate;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

import static org.axonframework.commandhandling.GenericCommandResultMessage.asCommandResultMessage;

/**
 * What no command bus can avoid for the bank workload, on one thread and with no bus: build the deposit command
 * message (as every dispatcher does), invoke the handler on the account kept in memory through Axon's own aggregate
 * ({@code AnnotatedAggregate.handle}), which builds the event message and runs the event-sourcing handler, append the
 * event to the same storage engine as the throughput benchmark (Axon's in-memory engine, through Axon's embedded event
 * store, one append per command), and build the result message. Its rate times the cores is the in-memory limit of the
 * machine; {@link ThroughputBenchmark}'s buses are reported as a share of it.
 * <p>
 * Left out, because a bus can avoid them per command: a Unit of Work per command (its correlation data and phases;
 * the limit's event messages carry no correlation data), the repository's load and lock, interceptors, the callback and
 * any hand-off between threads. Kept in, because no bus can avoid them: Axon's handler invocation and
 * {@code apply}, event identifiers (ringbus's time-based factory is on the class path for every bus), the storage
 * engine's append.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-Xms8g", "-Xmx8g"})
public class LimitBenchmark {

    /** The accounts, kept in memory as Axon aggregates on an embedded event store over the in-memory engine. */
    @State(Scope.Benchmark)
    public static class Accounts {

        EmbeddedEventStore eventStore;
        EventSourcedAggregate<Account>[] accounts;
        String[] ids;

        @Setup(Level.Trial)
        @SuppressWarnings("unchecked")
        public void open() throws Exception {
            eventStore = EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
            AggregateModel<Account> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(Account.class);
            accounts = new EventSourcedAggregate[BankApplication.ACCOUNTS];
            ids = new String[BankApplication.ACCOUNTS];
            for (int i = 0; i < accounts.length; i++) {
                ids[i] = BankApplication.accountId(i);
                String id = ids[i];
                Callable<Account> open = () -> new Account(new Account.OpenAccount(id));
                accounts[i] = EventSourcedAggregate.initialize(open, model, eventStore,
                                                               NoSnapshotTriggerDefinition.TRIGGER);
            }
        }

        @TearDown(Level.Trial)
        public void close() {
            eventStore.shutDown();
        }
    }

    /**
     * Axon's in-memory storage engine alone, emptied before each iteration (it keeps every event), and one event to
     * append to it.
     */
    @State(Scope.Benchmark)
    public static class Engine {

        InMemoryEventStorageEngine engine;
        List<DomainEventMessage<?>> oneEvent;

        @Setup(Level.Iteration)
        public void empty() {
            engine = new InMemoryEventStorageEngine();
            oneEvent = List.of(new GenericDomainEventMessage<>(
                    "Account", BankApplication.accountId(0), 0, new Account.Deposited(BankApplication.accountId(0), 1)));
        }
    }

    /**
     * The in-memory engine's own bound: events/s it appends, one per call as ringbus's store stage gives them to it
     * (its multi-event append would let tracking processors skip events), from one thread (it appends under one lock,
     * so more threads would only queue for it). An in-memory bus cannot store more events per second than this.
     */
    @Benchmark
    @Threads(1)
    public Engine engineAppendOneByOne(Engine engine) {
        engine.engine.appendEvents(engine.oneEvent);
        return engine;
    }

    /** Each benchmark thread's next account. */
    @State(Scope.Thread)
    public static class Cursor {
        int next;
    }

    /** One deposit on the next account, round robin over all of them. */
    @Benchmark
    @Threads(1)
    public CommandResultMessage<?> oneThread(Accounts bank, Cursor cursor) throws Exception {
        int i = cursor.next;
        cursor.next = i + 1 == bank.accounts.length ? 0 : i + 1;
        Object result = bank.accounts[i].handle(
                GenericCommandMessage.asCommandMessage(new Account.Deposit(bank.ids[i], 1)));
        return asCommandResultMessage(result);
    }
}
