package io.github.ringbus.postgres;

import com.fasterxml.jackson.annotation.JsonAutoDetect;
import com.fasterxml.jackson.annotation.PropertyAccessor;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.CommitOutcomeUnknownException;
import io.github.ringbus.PipelineMonitor;
import io.github.ringbus.PublishMode;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.StageTimes;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.github.ringbus.postgres.TortureAccount.Deposit;
import io.github.ringbus.postgres.TortureAccount.DepositInTwo;
import io.github.ringbus.postgres.TortureAccount.Fault;
import io.github.ringbus.postgres.TortureAccount.GetBalance;
import io.github.ringbus.postgres.TortureAccount.InjectedFailure;
import io.github.ringbus.postgres.TortureAccount.Open;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.AggregateSnapshotter;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.monitoring.MessageMonitor;
import org.axonframework.monitoring.NoOpMessageMonitorCallback;
import org.axonframework.serialization.Serializer;
import org.axonframework.serialization.json.JacksonSerializer;

import java.io.PrintStream;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

/**
 * The seeded torture: ringbus on a real PostgreSQL event store, driven by many dispatchers over many aggregates, with
 * faults injected everywhere a command can fail and everywhere user code can throw (or leave the interrupt flag of
 * the ring's thread it runs on set: handler, storage engine, callback), PostgreSQL backends terminated,
 * and the bus shut down mid-stream and replaced by a cold one (empty cache) several times. An independent model
 * records what each callback said; at the end the stored events alone are checked against it:
 * <ul>
 *   <li>every callback was called exactly once;</li>
 *   <li>every acknowledged command is stored exactly once, wholly (both events of a two-event command), and its
 *       result is the balance its events recorded;</li>
 *   <li>no command that failed with a known outcome (handler, interceptor, failed append or transaction, aggregate
 *       not found, a generation given up, shutdown, refused dispatch, a connection lost during the append, a
 *       conflict) has any event stored; a command whose outcome ringbus reported unknown
 *       ({@code CommitOutcomeUnknownException}: its commit failed without the database saying it rolled back) is
 *       stored wholly or not at all;</li>
 *   <li>per aggregate, sequence numbers are gapless from 0, the first event is its creation, and each balance is
 *       the one before it plus the amount: every command ran on the state of exactly the stored commands before
 *       it, also after failures, evictions, snapshots and cold reloads;</li>
 *   <li>one dispatcher's commands for one aggregate are stored in the order it dispatched them;</li>
 *   <li>a fresh bus loads every aggregate with the balance the model expects and accepts new commands.</li>
 * </ul>
 * Reproducible from its seed as far as anything with threads is: the seed fixes each dispatcher's commands and
 * faults, each epoch's settings and shutdown point, and the schedule of terminated backends; the interleaving is the
 * machine's.
 * <p>
 * Runs in a process of its own ({@link TortureTest} starts it, at log level ERROR: the injected faults make ringbus
 * log thousands of warnings). Arguments: {@code seed commands dispatchers aggregates epochs}. Prints progress, then
 * one line {@code RESULT OK ...} or {@code RESULT FAIL ...}, and exits 0 or 1.
 */
public final class Torture {

    /** Command kinds, in {@link #kind}. */
    private static final byte OPEN = 0;
    private static final byte DEPOSIT = 1;
    private static final byte DEPOSIT_IN_TWO = 2;

    /** Outcomes, in {@link #outcome}. */
    static final int NOT_DISPATCHED = 0;
    static final int PENDING = 1;
    static final int ACKED = 2;
    static final int FAILED_KNOWN = 3;
    static final int FAILED_UNKNOWN = 4;
    static final int REFUSED = 5;
    private static final String[] OUTCOME_NAMES = {"never dispatched", "pending", "acknowledged", "failed",
            "failed with unknown outcome", "refused at dispatch"};

    /** Faults per 100,000 commands. */
    private static final Map<Fault, Integer> FAULT_RATES = Map.ofEntries(
            Map.entry(Fault.HANDLER_BEFORE_APPLY, 800),
            Map.entry(Fault.HANDLER_AFTER_APPLY, 800),
            Map.entry(Fault.INTERCEPTOR_BEFORE, 300),
            Map.entry(Fault.INTERCEPTOR_AFTER, 300),
            Map.entry(Fault.DISPATCH_INTERCEPTOR, 200),
            Map.entry(Fault.MONITOR, 300),
            Map.entry(Fault.CALLBACK, 300),
            Map.entry(Fault.STORE_BEFORE_WRITE, 40),
            Map.entry(Fault.STORE_AFTER_WRITE, 40),
            Map.entry(Fault.COMMIT_UNKNOWN, 4),
            Map.entry(Fault.HANDLER_INTERRUPTS, 200),
            Map.entry(Fault.STORE_INTERRUPTS, 40),
            Map.entry(Fault.CALLBACK_INTERRUPTS, 200),
            Map.entry(Fault.STORE_DEADLOCK, 40));
    private static final Fault[] FAULTS = Fault.values();

    static final Serializer SERIALIZER = JacksonSerializer.builder()
            .objectMapper(new ObjectMapper().setVisibility(PropertyAccessor.FIELD, JsonAutoDetect.Visibility.ANY))
            .build();
    private static final String APPLICATION_NAME = "ringbus-torture";
    private static final int WINDOW = 256;

    private final long seed;
    private final long commands;
    private final int dispatchers;
    private final int aggregates;
    private final int epochs;
    private final PrintStream out;

    // --- the model: one entry per command id (ids in dispatch order over all dispatchers) -------------------------
    private final int capacity;
    private final AtomicIntegerArray outcome;
    private final int[] aggregateOf;
    private final byte[] kind;
    private final byte[] dispatcherOf;
    private final AtomicLong nextId = new AtomicLong();
    private final byte[] fault;
    private final long[] ackedResult;
    /** Per aggregate: 0 not opened, 1 open dispatched, 2 open acknowledged. */
    private final AtomicIntegerArray opened;
    private final int[] nextToOpen;
    private final List<ConcurrentLinkedQueue<Integer>> reopen = new ArrayList<>();
    private final AtomicLong dispatched = new AtomicLong();
    private final LongAdder callbacksTwice = new LongAdder();
    private final LongAdder[] faultsInjected = new LongAdder[FAULTS.length];
    private final LongAdder backendsTerminated = new LongAdder();
    private final LongAdder commitUnknownFired = new LongAdder();
    private final Set<Long> commitUnknownDone = ConcurrentHashMap.newKeySet();
    private final LongAdder deadlocksFired = new LongAdder();
    private final Set<Long> deadlockDone = ConcurrentHashMap.newKeySet();
    private final List<String> epochLog = new ArrayList<>();
    private final List<String> violations = new ArrayList<>();
    /** The failure each failed command was reported, as its chain of exception classes (for the violations). */
    private final Map<Integer, String> failures = new ConcurrentHashMap<>();
    private final LongAdder violationCount = new LongAdder();

    Torture(long seed, long commands, int dispatchers, int aggregates, int epochs, PrintStream out) {
        this.seed = seed;
        this.commands = commands;
        this.dispatchers = dispatchers;
        this.aggregates = aggregates;
        this.epochs = epochs;
        this.out = out;
        this.capacity = Math.toIntExact(commands + 1024);
        this.outcome = new AtomicIntegerArray(capacity);
        this.aggregateOf = new int[capacity];
        this.kind = new byte[capacity];
        this.dispatcherOf = new byte[capacity];
        this.fault = new byte[capacity];
        this.ackedResult = new long[capacity];
        this.opened = new AtomicIntegerArray(aggregates);
        this.nextToOpen = new int[dispatchers];
        for (int d = 0; d < dispatchers; d++) {
            nextToOpen[d] = d;
            reopen.add(new ConcurrentLinkedQueue<>());
        }
        for (int i = 0; i < faultsInjected.length; i++) {
            faultsInjected[i] = new LongAdder();
        }
    }

    public static void main(String[] args) throws Exception {
        long seed = Long.parseLong(args[0]);
        long commands = Long.parseLong(args[1]);
        int dispatchers = Integer.parseInt(args[2]);
        int aggregates = Integer.parseInt(args[3]);
        int epochs = Integer.parseInt(args[4]);
        PrintStream out = System.out;
        out.println("TORTURE seed=" + seed + " commands=" + commands + " dispatchers=" + dispatchers
                            + " aggregates=" + aggregates + " epochs=" + epochs);
        int exit;
        try (PostgresServer server = PostgresServer.startForTests()) {
            exit = new Torture(seed, commands, dispatchers, aggregates, epochs, out).run(server) ? 0 : 1;
        } catch (Throwable e) {
            e.printStackTrace(out);
            out.println("RESULT FAIL seed=" + seed + " " + e);
            exit = 1;
        }
        out.flush();
        System.exit(exit);
    }

    /** @return true when every invariant held */
    boolean run(PostgresServer server) throws Exception {
        long started = System.nanoTime();
        long perEpoch = (commands + epochs - 1) / epochs;
        int epoch = 0;
        while (dispatched.get() < commands) {
            // Epochs cut short by their shutdown leave more to the next ones.
            long quota = Math.min(Math.max(perEpoch, dispatchers), commands - dispatched.get());
            long before = dispatched.get();
            runEpoch(server, epoch++, quota);
            if (dispatched.get() == before) {
                throw new IllegalStateException("Epoch " + (epoch - 1) + " dispatched nothing");
            }
        }
        long tortureNanos = System.nanoTime() - started;
        checkOutcomesComplete();
        Verification verification = verify(server);
        long[] balances = verification.balances;
        checkFreshBus(server, balances);
        long totalNanos = System.nanoTime() - started;
        report(epoch, tortureNanos, totalNanos, verification, server);
        return violationCount.sum() == 0;
    }

    // --- one epoch: a bus with seeded settings, dispatchers, a backend killer, a shutdown mid-stream -------------

    private void runEpoch(PostgresServer server, int epoch, long quota) throws Exception {
        long epochStarted = System.nanoTime();
        Random settings = seeded(seed * 1_000_003L + epoch);
        boolean compact = settings.nextBoolean();
        int handlerThreads = compact ? 1 : 1 + settings.nextInt(2);
        PublishMode publishMode = settings.nextBoolean() ? PublishMode.IN_TRANSACTION : PublishMode.PARALLEL;
        // -Dtorture.blocking=false leaves BLOCKING out (it once spun on earlier stages, and epochs that read the store
        // cold ran ten to twenty times slower with it on 2 cores; it parks there now).
        boolean blocking = !settings.nextBoolean() && Boolean.parseBoolean(System.getProperty("torture.blocking", "true"));
        WaitStrategyChoice wait = blocking ? WaitStrategyChoice.BLOCKING : WaitStrategyChoice.ADAPTIVE;
        int cacheSize = settings.nextBoolean() ? 4_000 : 100_000;
        int maxBatchEvents = settings.nextBoolean() ? 64 : 1_024;
        int ringSize = settings.nextBoolean() ? 1_024 : 4_096;
        // Most epochs are cut short by a shutdown while the dispatchers are busy; some drain to their end.
        double stopAt = settings.nextInt(4) == 0 ? 1.0 : 0.5 + settings.nextDouble() * 0.45;
        long killerSeed = settings.nextLong();
        // FULL epochs run one, two or three store threads (each its own transactions and connection).
        int storeThreads = compact ? 1 : 1 + settings.nextInt(3);
        // Half the epochs read their aggregates as docs/postgres.md sets it up (auto-commit, no COMMIT), half in the
        // store's own (faulty) transactions, the bus's default. Drawn last: a seed's other settings stay as they were.
        boolean autoCommitReads = settings.nextBoolean();

        try (HikariDataSource pool = pool(server, storeThreads)) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            FaultyTransactions storeTransactions = new FaultyTransactions(transactions);
            RingEventStore eventStore = RingEventStore.builder()
                                                      .storageEngine(PostgresServer.engine(
                                                              transactions, storeTransactions::beforeAppend,
                                                              SERIALIZER))
                                                      .build();
            AggregateSnapshotter snapshotter = AggregateSnapshotter.builder()
                                                                   .eventStore(eventStore)
                                                                   .aggregateFactories(new GenericAggregateFactory<>(
                                                                           TortureAccount.class))
                                                                   .transactionManager(transactions)
                                                                   .build();
            RingCommandBus bus = RingCommandBus.builder()
                                               .eventStore(eventStore)
                                               .transactionManager(storeTransactions)
                                               .readTransactionManager(autoCommitReads
                                                                       ? transactions.autoCommitReads()
                                                                       : storeTransactions)
                                               .topology(compact ? Topology.COMPACT : Topology.FULL)
                                               .handlerThreads(handlerThreads)
                                               .storeThreads(storeThreads)
                                               .publishMode(publishMode)
                                               .waitStrategy(wait)
                                               .cacheSize(cacheSize)
                                               .maxStoreBatchEvents(maxBatchEvents)
                                               .ringSize(ringSize)
                                               .snapshotter(snapshotter, 25)
                                               .shutdownTimeout(Duration.ofSeconds(60))
                                               .messageMonitor(new ThrowingMonitor())
                                               .pipelineMonitor(new ThrowingPipelineMonitor())
                                               .dispatchInterceptor(throwingDispatchInterceptor())
                                               .handlerInterceptor(throwingHandlerInterceptor())
                                               .build();
            bus.registerAggregate(TortureAccount.class);
            bus.start();

            long epochStart = dispatched.get();
            long stopAfter = epochStart + Math.max(1, (long) (quota * stopAt));
            AtomicBoolean epochOver = new AtomicBoolean();
            List<Thread> threads = new ArrayList<>();
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                long share = quota / dispatchers + (d < quota % dispatchers ? 1 : 0);
                Random random = seeded(seed * 7_919L + epoch * 104_729L + d);
                threads.add(started("torture-dispatcher-" + d, () -> {
                    try {
                        dispatch(bus, dispatcher, share, random, epochOver);
                    } catch (RuntimeException | Error e) {
                        violation("dispatcher " + dispatcher + " failed: " + e);
                    }
                }));
            }
            Thread killer = started("torture-backend-killer",
                                    () -> terminateBackends(server, new Random(killerSeed), epochOver));

            boolean cut = stopAt < 1.0;
            if (cut) {
                while (dispatched.get() < stopAfter && anyAlive(threads)) {
                    Thread.sleep(1);
                }
            } else {
                for (Thread thread : threads) {
                    thread.join();
                }
            }
            long shutdownAt = dispatched.get() - epochStart;
            long shutdownStarted = System.nanoTime();
            bus.shutdown();
            epochOver.set(true);
            for (Thread thread : threads) {
                thread.join();
            }
            killer.interrupt();
            killer.join();
            eventStore.shutDown();
            String line = String.format(
                    "epoch %d: %s, %d handler thread(s), %d store thread(s), %s, %s, cache %,d, batch %,d events, ring %,d; "
                            + "%,d commands, %s at %,d (shutdown took %.1f s)", epoch, compact ? "COMPACT" : "FULL", handlerThreads,
                    storeThreads, publishMode, wait, cacheSize, maxBatchEvents, ringSize, dispatched.get() - epochStart,
                    cut ? "shut down mid-stream" : "drained and shut down", shutdownAt,
                    (System.nanoTime() - shutdownStarted) / 1e9);
            line += autoCommitReads ? ", reads in auto-commit" : ", reads in transactions";
            line += String.format(", %.1f s in all", (System.nanoTime() - epochStarted) / 1e9);
            epochLog.add(line);
            out.println(line);
            out.flush();
        }
    }

    /**
     * A generator for a seed derived from the run's seed. {@code new Random(n)} for consecutive {@code n} starts with
     * nearly the same values (its first {@code nextBoolean()} was the same for all 40 epochs of most seeds, so a run
     * tried one topology only); SplittableRandom's mixing spreads them first.
     */
    private static Random seeded(long derivedSeed) {
        return new Random(new SplittableRandom(derivedSeed).nextLong());
    }

    private static Thread started(String name, Runnable work) {
        Thread thread = new Thread(work, name);
        thread.start();
        return thread;
    }

    private static boolean anyAlive(List<Thread> threads) {
        for (Thread thread : threads) {
            if (thread.isAlive()) {
                return true;
            }
        }
        return false;
    }

    private void dispatch(RingCommandBus bus, int dispatcher, long share, Random random, AtomicBoolean epochOver) {
        Semaphore window = new Semaphore(WINDOW);
        for (long i = 0; i < share && !epochOver.get() && bus.isRunning(); i++) {
            window.acquireUninterruptibly();
            int id = nextId(dispatcher);
            Object command = nextCommand(id, dispatcher, random);
            outcome.set(id, PENDING);
            dispatched.incrementAndGet();
            try {
                bus.dispatch(GenericCommandMessage.asCommandMessage(command), callback(id, window));
            } catch (InjectedFailure refused) {
                if (outcome.compareAndSet(id, PENDING, REFUSED)) {
                    window.release();
                } else {
                    violation("command " + id + ": its dispatch threw (" + refused.getMessage()
                                      + "), yet its callback was called ("
                                      + OUTCOME_NAMES[outcome.get(id)] + ")");
                }
            } catch (RuntimeException unexpected) {
                outcome.set(id, REFUSED);
                window.release();
                violation("command " + id + ": dispatch threw " + unexpected);
            }
        }
        // Every callback of this dispatcher has come before the epoch ends.
        window.acquireUninterruptibly(WINDOW);
    }

    private int nextId(int dispatcher) {
        long id = nextId.getAndIncrement();
        if (id >= capacity) {
            throw new IllegalStateException("More commands than the model holds: " + id);
        }
        dispatcherOf[(int) id] = (byte) dispatcher;
        return (int) id;
    }

    private Object nextCommand(int id, int dispatcher, Random random) {
        Fault injected = fault(random);
        fault[id] = (byte) injected.ordinal();
        faultsInjected[injected.ordinal()].increment();
        Integer again = reopen.get(dispatcher).poll();
        int toOpen = again != null ? again : nextToOpen[dispatcher] < aggregates ? nextToOpen[dispatcher] : -1;
        // Opening comes first: a dispatcher opens its accounts at twice the pace of the run, so all are open by its
        // middle, and the ones opened first (the hot set) early.
        boolean open = toOpen >= 0 && (again != null || random.nextInt(100) < openPercent(dispatcher));
        if (open) {
            if (again == null) {
                nextToOpen[dispatcher] += dispatchers;
            }
            kind[id] = OPEN;
            aggregateOf[id] = toOpen;
            opened.compareAndSet(toOpen, 0, 1);
            return new Open(account(toOpen), id, injected);
        }
        int aggregate = target(random);
        aggregateOf[id] = aggregate;
        long amount = 1 + id % 997;
        if (random.nextInt(100) < 15) {
            kind[id] = DEPOSIT_IN_TWO;
            return new DepositInTwo(account(aggregate), id, amount, injected);
        }
        kind[id] = DEPOSIT;
        return new Deposit(account(aggregate), id, amount, injected);
    }

    private int openPercent(int dispatcher) {
        long perDispatcher = Math.max(1, commands / dispatchers);
        long toOpen = aggregates / dispatchers + 1;
        return (int) Math.min(100, Math.max(1, 200 * toOpen / perDispatcher));
    }

    /** 80 % of deposits go to the first tenth of the accounts (hot), the rest anywhere; prefers opened accounts. */
    private int target(Random random) {
        int hot = Math.max(1, aggregates / 10);
        int candidate = 0;
        for (int attempt = 0; attempt < 4; attempt++) {
            candidate = random.nextInt(100) < 80 ? random.nextInt(hot) : random.nextInt(aggregates);
            if (opened.get(candidate) == 2) {
                return candidate;
            }
        }
        return candidate; // possibly not open (yet): the command fails with the aggregate not found
    }

    private static Fault fault(Random random) {
        int draw = random.nextInt(100_000);
        for (Fault candidate : FAULTS) {
            Integer rate = FAULT_RATES.get(candidate);
            if (rate != null) {
                if (draw < rate) {
                    return candidate;
                }
                draw -= rate;
            }
        }
        return Fault.NONE;
    }

    /** The faults that interrupt a thread and let the command go on: it may succeed. */
    private static boolean interrupts(Fault fault) {
        return fault == Fault.HANDLER_INTERRUPTS || fault == Fault.STORE_INTERRUPTS
                || fault == Fault.CALLBACK_INTERRUPTS;
    }

    static String account(int aggregate) {
        return "t-" + aggregate;
    }

    private CommandCallback<Object, Object> callback(int id, Semaphore window) {
        return (command, result) -> {
            int reported;
            if (result.isExceptional()) {
                reported = unknownOutcome(result.exceptionResult()) ? FAILED_UNKNOWN : FAILED_KNOWN;
                failures.put(id, describe(result.exceptionResult()));
            } else {
                reported = ACKED;
                Object payload = result.getPayload();
                ackedResult[id] = payload instanceof Long balance ? balance : Long.MIN_VALUE;
            }
            if (!outcome.compareAndSet(id, PENDING, reported)) {
                callbacksTwice.increment();
                violation("command " + id + ": callback called again (" + OUTCOME_NAMES[outcome.get(id)] + ", now "
                                  + OUTCOME_NAMES[reported] + ")");
                return;
            }
            if (kind[id] == OPEN) {
                if (reported == ACKED) {
                    opened.set(aggregateOf[id], 2);
                } else if (reported == FAILED_KNOWN) {
                    reopen.get(dispatcherOf[id]).add(aggregateOf[id]);
                }
            }
            window.release();
            if (fault[id] == Fault.CALLBACK_INTERRUPTS.ordinal()
                    && Thread.currentThread().getName().startsWith("ringbus-")) {
                // On the ring's thread only: a refused command's callback runs on the dispatcher, whose loop this is.
                Thread.currentThread().interrupt();
            }
            if (fault[id] == Fault.CALLBACK.ordinal()) {
                throw new InjectedFailure(Fault.CALLBACK, id);
            }
        };
    }

    /**
     * A failure after which the command may be stored all the same: the one ringbus reports for it, a
     * {@link CommitOutcomeUnknownException} (its transaction's commit failed without the database saying it rolled
     * back: the injected failure after a commit, or a connection lost during {@code COMMIT}). Every other failure,
     * also one with a JDBC exception behind it (a connection lost during the append, a conflict), says that nothing
     * of the command is stored, and the check holds ringbus to it.
     */
    static boolean unknownOutcome(Throwable failure) {
        java.util.ArrayDeque<Throwable> pending = new java.util.ArrayDeque<>();
        Set<Throwable> seen = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        pending.add(failure);
        while (!pending.isEmpty() && seen.size() < 64) {
            Throwable t = pending.poll();
            if (!seen.add(t)) {
                continue;
            }
            if (t instanceof CommitOutcomeUnknownException) {
                return true;
            }
            if (t.getCause() != null) {
                pending.add(t.getCause());
            }
            pending.addAll(Arrays.asList(t.getSuppressed()));
        }
        return false;
    }

    /** The exception classes of a failure's chain of causes, and the first message: short, and often the same. */
    static String describe(Throwable failure) {
        StringBuilder chain = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            chain.append(chain.length() == 0 ? "" : " <- ").append(t.getClass().getSimpleName());
        }
        String message = String.valueOf(failure.getMessage());
        return (chain + ": " + message.substring(0, Math.min(160, message.length()))).intern();
    }

    private static Fault faultOf(Object payload) {
        if (payload instanceof Deposit deposit) {
            return deposit.fault();
        }
        if (payload instanceof DepositInTwo deposit) {
            return deposit.fault();
        }
        if (payload instanceof Open open) {
            return open.fault();
        }
        return Fault.NONE;
    }

    private static long commandIdOf(Object payload) {
        if (payload instanceof Deposit deposit) {
            return deposit.commandId();
        }
        if (payload instanceof DepositInTwo deposit) {
            return deposit.commandId();
        }
        if (payload instanceof Open open) {
            return open.commandId();
        }
        return -1;
    }

    // --- user components that throw ------------------------------------------------------------------------------

    private static MessageDispatchInterceptor<CommandMessage<?>> throwingDispatchInterceptor() {
        return messages -> (index, command) -> {
            if (faultOf(command.getPayload()) == Fault.DISPATCH_INTERCEPTOR) {
                throw new InjectedFailure(Fault.DISPATCH_INTERCEPTOR, commandIdOf(command.getPayload()));
            }
            return command;
        };
    }

    private static MessageHandlerInterceptor<CommandMessage<?>> throwingHandlerInterceptor() {
        return (unitOfWork, chain) -> {
            Object payload = unitOfWork.getMessage().getPayload();
            Fault fault = faultOf(payload);
            if (fault == Fault.INTERCEPTOR_BEFORE) {
                throw new InjectedFailure(fault, commandIdOf(payload));
            }
            Object result = chain.proceed();
            if (fault == Fault.INTERCEPTOR_AFTER) {
                throw new InjectedFailure(fault, commandIdOf(payload));
            }
            return result;
        };
    }

    /** A message monitor whose callback throws for the commands that carry {@link Fault#MONITOR}. */
    private static final class ThrowingMonitor implements MessageMonitor<CommandMessage<?>> {

        @Override
        public MonitorCallback onMessageIngested(CommandMessage<?> message) {
            if (faultOf(message.getPayload()) != Fault.MONITOR) {
                return NoOpMessageMonitorCallback.INSTANCE;
            }
            long id = commandIdOf(message.getPayload());
            return new MonitorCallback() {
                @Override
                public void reportSuccess() {
                    throw new InjectedFailure(Fault.MONITOR, id);
                }

                @Override
                public void reportFailure(Throwable cause) {
                    throw new InjectedFailure(Fault.MONITOR, id);
                }

                @Override
                public void reportIgnored() {
                    throw new InjectedFailure(Fault.MONITOR, id);
                }
            };
        }
    }

    /** A pipeline monitor that throws on every 1,009th completion (it is told no command's payload). */
    private static final class ThrowingPipelineMonitor implements PipelineMonitor {

        // Called by every store thread's complete stage.
        private final java.util.concurrent.atomic.AtomicLong completions = new java.util.concurrent.atomic.AtomicLong();

        @Override
        public void commandCompleted(String commandName, Throwable failure, StageTimes times) {
            if (completions.incrementAndGet() % 1_009 == 0) {
                throw new IllegalStateException("Injected pipeline monitor failure");
            }
        }
    }

    /**
     * The store stage's transactions, failing those that hold a marked command's events: before the write (in the
     * storage engine's append, {@link #beforeAppend}), after the write (at commit, rolled back instead), or after a
     * commit that went through (once per command: the outcome the caller cannot know).
     */
    private final class FaultyTransactions implements TransactionManager {

        private final TransactionManager delegate;
        /** Per store thread: what its current transaction's appends marked (each store thread has its own). */
        private final ThreadLocal<long[]> marks = ThreadLocal.withInitial(() -> new long[]{0, -1});

        FaultyTransactions(TransactionManager delegate) {
            this.delegate = delegate;
        }

        void beforeAppend(Connection connection, List<? extends EventMessage<?>> events) {
            for (EventMessage<?> event : events) {
                Object payload = event.getPayload();
                Fault fault = payload instanceof TortureAccount.Deposited deposited ? deposited.fault()
                        : payload instanceof TortureAccount.Opened opened ? opened.fault() : Fault.NONE;
                long id = payload instanceof TortureAccount.Deposited deposited ? deposited.commandId()
                        : payload instanceof TortureAccount.Opened opened ? opened.commandId() : -1;
                switch (fault) {
                    case STORE_BEFORE_WRITE -> throw new InjectedFailure(fault, id);
                    case STORE_AFTER_WRITE -> marks.get()[0] = 1;
                    case STORE_INTERRUPTS -> Thread.currentThread().interrupt();
                    case STORE_DEADLOCK -> {
                        if (deadlockDone.add(id)) {
                            deadlocksFired.increment();
                            throw new InjectedFailure(fault, id, new SQLException("injected: deadlock detected",
                                                                                  "40P01"));
                        }
                    }
                    case COMMIT_UNKNOWN -> {
                        if (!commitUnknownDone.contains(id)) {
                            marks.get()[1] = id;
                        }
                    }
                    default -> {
                    }
                }
            }
        }

        @Override
        public Transaction startTransaction() {
            Transaction transaction = delegate.startTransaction();
            long[] mark = marks.get();
            mark[0] = 0;
            mark[1] = -1;
            return new Transaction() {
                @Override
                public void commit() {
                    if (mark[0] == 1) {
                        // As a deferred constraint that fails at COMMIT: the database rolls back and says so.
                        transaction.rollback();
                        throw new InjectedFailure(Fault.STORE_AFTER_WRITE, -1, new SQLException(
                                "injected: deferred constraint failed at commit", "23514"));
                    }
                    transaction.commit();
                    long id = mark[1];
                    if (id >= 0 && commitUnknownDone.add(id)) {
                        commitUnknownFired.increment();
                        throw new InjectedFailure(Fault.COMMIT_UNKNOWN, id);
                    }
                }

                @Override
                public void rollback() {
                    transaction.rollback();
                }
            };
        }
    }

    private void terminateBackends(PostgresServer server, Random random, AtomicBoolean epochOver) {
        while (!epochOver.get()) {
            try {
                Thread.sleep(1_000 + random.nextInt(3_000));
            } catch (InterruptedException e) {
                return;
            }
            try (Connection admin = server.connect(); Statement statement = admin.createStatement();
                 ResultSet terminated = statement.executeQuery(
                         // Materialized first: PostgreSQL may evaluate a WHERE clause's conditions in any order.
                         "WITH victims AS MATERIALIZED (SELECT pid FROM pg_stat_activity WHERE application_name = '"
                                 + APPLICATION_NAME + "' AND pid <> pg_backend_pid()) "
                                 + "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM victims")) {
                terminated.next();
                backendsTerminated.add(terminated.getLong(1));
            } catch (SQLException e) {
                out.println("backend killer: " + e);
            }
        }
    }

    private static HikariDataSource pool(PostgresServer server, int storeThreads) {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(server.jdbcUrl());
        config.setMaximumPoolSize(5 + storeThreads);
        config.setMinimumIdle(1);
        config.setConnectionTimeout(2_000);
        config.setValidationTimeout(500);
        config.setInitializationFailTimeout(-1);
        config.setPoolName("torture");
        config.addDataSourceProperty("reWriteBatchedInserts", "true");
        config.addDataSourceProperty("ApplicationName", APPLICATION_NAME);
        return new HikariDataSource(config);
    }

    // --- checks ----------------------------------------------------------------------------------------------------

    private long idsIssued() {
        return Math.min(nextId.get(), capacity);
    }

    private void checkOutcomesComplete() {
        long ids = idsIssued();
        for (int id = 0; id < ids; id++) {
            if (outcome.get(id) == PENDING) {
                violation("command " + id + ": its callback was never called");
            }
        }
    }

    /** What the stored events say, and the checks made while reading them. */
    private static final class Verification {
        long[] balances;
        long events;
        int aggregatesStored;
        long unknownStored;
        long unknownAbsent;
        final long[] byOutcome = new long[OUTCOME_NAMES.length];
    }

    private Verification verify(PostgresServer server) throws Exception {
        Verification result = new Verification();
        byte[] eventsOf = new byte[capacity];
        long[] storedBalance = new long[capacity];
        long[] balances = new long[aggregates];
        Arrays.fill(balances, Long.MIN_VALUE);
        ObjectMapper json = new ObjectMapper();
        try (Connection connection = server.connect()) {
            connection.setAutoCommit(false);
            try (PreparedStatement query = connection.prepareStatement(
                    "SELECT aggregateIdentifier, sequenceNumber, payloadType, payload FROM DomainEventEntry "
                            + "ORDER BY aggregateIdentifier, sequenceNumber")) {
                query.setFetchSize(10_000);
                try (ResultSet rows = query.executeQuery()) {
                    String current = null;
                    int aggregate = -1;
                    long expectedSequence = 0;
                    long balance = 0;
                    long[] lastIdOf = new long[dispatchers];
                    long lastId = -1;
                    while (rows.next()) {
                        String identifier = rows.getString(1);
                        long sequence = rows.getLong(2);
                        String type = rows.getString(3);
                        JsonNode payload = json.readTree(rows.getBytes(4));
                        result.events++;
                        if (!identifier.equals(current)) {
                            current = identifier;
                            aggregate = Integer.parseInt(identifier.substring(2));
                            result.aggregatesStored++;
                            expectedSequence = 0;
                            balance = 0;
                            Arrays.fill(lastIdOf, -1);
                            lastId = -1;
                        }
                        if (sequence != expectedSequence) {
                            violation(identifier + ": sequence " + sequence + " where " + expectedSequence
                                              + " was expected (a gap or a duplicate)");
                        }
                        expectedSequence = sequence + 1;
                        long id = payload.get("commandId").asLong();
                        if (id < 0 || id >= capacity || aggregateOf[(int) id] != aggregate) {
                            violation(identifier + "/" + sequence + ": command " + id + " was not for this account");
                            continue;
                        }
                        int command = (int) id;
                        eventsOf[command]++;
                        boolean opening = type.endsWith("Opened");
                        if (opening != (sequence == 0) || opening != (kind[command] == OPEN)) {
                            violation(identifier + "/" + sequence + ": " + type + " of command " + id
                                              + " where the account's " + (sequence == 0 ? "creation" : "deposit")
                                              + " belongs");
                        }
                        if (!opening) {
                            balance += payload.get("amount").asLong();
                            long recorded = payload.get("balanceAfter").asLong();
                            if (recorded != balance) {
                                violation(identifier + "/" + sequence + ": command " + id + " recorded balance "
                                                  + recorded + " on a history that sums to " + balance
                                                  + " (it ran on a state other than the stored one)");
                                balance = recorded;
                            }
                            storedBalance[command] = recorded;
                        }
                        int dispatcher = dispatcherOf[command];
                        if (id != lastId && id <= lastIdOf[dispatcher]) {
                            violation(identifier + "/" + sequence + ": command " + id + " of dispatcher " + dispatcher
                                              + " stored after its later command " + lastIdOf[dispatcher]);
                        }
                        lastIdOf[dispatcher] = Math.max(lastIdOf[dispatcher], id);
                        lastId = id;
                        balances[aggregate] = balance;
                    }
                }
            }
        }
        long ids = idsIssued();
        long[] modelBalances = new long[aggregates];
        for (int id = 0; id < ids; id++) {
            int reported = outcome.get(id);
            result.byOutcome[reported]++;
            int expectedEvents = kind[id] == DEPOSIT_IN_TWO ? 2 : 1;
            int stored = eventsOf[id];
            boolean whole = stored == expectedEvents;
            switch (reported) {
                case ACKED -> {
                    if (!whole) {
                        violation("command " + id + " (" + Fault.values()[fault[id]] + ") was acknowledged but "
                                          + stored + " of its " + expectedEvents + " events are stored");
                    } else if (kind[id] != OPEN && ackedResult[id] != storedBalance[id]) {
                        violation("command " + id + " was acknowledged with balance " + ackedResult[id]
                                          + " but its events recorded " + storedBalance[id]);
                    }
                    Fault injected = Fault.values()[fault[id]];
                    if (injected != Fault.NONE && injected != Fault.MONITOR && injected != Fault.CALLBACK
                            && injected != Fault.COMMIT_UNKNOWN && injected != Fault.STORE_DEADLOCK
                            && !interrupts(injected)) {
                        violation("command " + id + " carried " + injected + " and was acknowledged");
                    }
                }
                case FAILED_KNOWN, REFUSED, NOT_DISPATCHED -> {
                    if (stored != 0) {
                        violation("command " + id + " (" + Fault.values()[fault[id]] + ", "
                                          + OUTCOME_NAMES[reported] + ": " + failures.get(id) + ") has " + stored
                                          + " events stored");
                    }
                }
                case FAILED_UNKNOWN -> {
                    if (stored != 0 && !whole) {
                        violation("command " + id + " (outcome unknown) is stored in part: " + stored + " of "
                                          + expectedEvents + " events");
                    }
                    if (stored == 0) {
                        result.unknownAbsent++;
                    } else {
                        result.unknownStored++;
                    }
                }
                default -> violation("command " + id + ": no outcome");
            }
            if (stored > expectedEvents) {
                violation("command " + id + " is stored " + stored + " times over " + expectedEvents + " events");
            }
            if (stored > 0 && kind[id] != OPEN) {
                modelBalances[aggregateOf[id]] += 1 + id % 997;
            }
        }
        for (int a = 0; a < aggregates; a++) {
            long stored = balances[a] == Long.MIN_VALUE ? 0 : balances[a];
            if (stored != modelBalances[a]) {
                violation(account(a) + ": stored balance " + stored + ", the model's " + modelBalances[a]);
            }
        }
        result.balances = balances;
        return result;
    }

    /** A fresh bus with an empty cache: every stored account loads with the model's balance and takes a deposit. */
    private void checkFreshBus(PostgresServer server, long[] balances) throws Exception {
        try (HikariDataSource pool = pool(server, 1)) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            RingEventStore eventStore = RingEventStore.builder()
                                                      .storageEngine(PostgresServer.engine(transactions, null,
                                                                                           SERIALIZER))
                                                      .build();
            RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).transactionManager(transactions)
                                               .build();
            bus.registerAggregate(TortureAccount.class);
            bus.start();
            try {
                List<FutureCallback<Object, Object>> reads = new ArrayList<>();
                for (int a = 0; a < aggregates; a++) {
                    FutureCallback<Object, Object> read = new FutureCallback<>();
                    reads.add(read);
                    bus.dispatch(GenericCommandMessage.asCommandMessage(new GetBalance(account(a))), read);
                }
                for (int a = 0; a < aggregates; a++) {
                    CommandResultMessage<?> read = reads.get(a).getResult(30, TimeUnit.SECONDS);
                    boolean exists = balances[a] != Long.MIN_VALUE;
                    if (exists && (read.isExceptional() || !Long.valueOf(balances[a]).equals(read.getPayload()))) {
                        violation(account(a) + ": a fresh bus reads " + (read.isExceptional()
                                ? read.exceptionResult() : read.getPayload()) + ", the store holds " + balances[a]);
                    } else if (!exists && !read.isExceptional()) {
                        violation(account(a) + ": never stored, yet a fresh bus loads it");
                    }
                }
                for (int a = 0; a < aggregates; a += Math.max(1, aggregates / 100)) {
                    if (balances[a] == Long.MIN_VALUE) {
                        continue;
                    }
                    FutureCallback<Object, Object> deposit = new FutureCallback<>();
                    bus.dispatch(GenericCommandMessage.asCommandMessage(
                            new Deposit(account(a), -1, 5, Fault.NONE)), deposit);
                    CommandResultMessage<?> result = deposit.getResult(30, TimeUnit.SECONDS);
                    if (result.isExceptional() || !Long.valueOf(balances[a] + 5).equals(result.getPayload())) {
                        violation(account(a) + ": a fresh bus's deposit gave " + (result.isExceptional()
                                ? result.exceptionResult() : result.getPayload()));
                    }
                }
            } finally {
                bus.shutdown();
                eventStore.shutDown();
            }
        }
    }

    private synchronized void violation(String what) {
        violationCount.increment();
        if (violations.size() < 30) {
            violations.add(what);
        }
    }

    private void report(int epochCount, long tortureNanos, long totalNanos, Verification verification,
                        PostgresServer server) throws SQLException {
        long snapshots;
        try (Connection connection = server.connect(); Statement statement = connection.createStatement();
             ResultSet count = statement.executeQuery("SELECT count(*) FROM SnapshotEventEntry")) {
            count.next();
            snapshots = count.getLong(1);
        }
        Map<String, Long> faults = new TreeMap<>();
        for (Fault candidate : FAULTS) {
            if (candidate != Fault.NONE) {
                faults.put(candidate.name(), faultsInjected[candidate.ordinal()].sum());
            }
        }
        Map<String, Long> outcomes = new TreeMap<>();
        for (int i = 0; i < OUTCOME_NAMES.length; i++) {
            if (verification.byOutcome[i] > 0) {
                outcomes.put(OUTCOME_NAMES[i], verification.byOutcome[i]);
            }
        }
        out.printf("commands dispatched: %,d in %d epochs over %.1f s (%,.0f/s), checked in %.1f s more%n",
                   dispatched.get(), epochCount, tortureNanos / 1e9, dispatched.get() / (tortureNanos / 1e9),
                   (totalNanos - tortureNanos) / 1e9);
        out.println("outcomes: " + outcomes);
        out.println("faults injected (commands carrying each): " + faults);
        out.printf("commits that reported failure after committing: %,d; appends failed as a deadlock's victim: %,d;"
                           + " database backends terminated: %,d%n",
                   commitUnknownFired.sum(), deadlocksFired.sum(), backendsTerminated.sum());
        Map<String, Long> byFailure = new java.util.HashMap<>();
        failures.values().forEach(f -> byFailure.merge(f.replaceAll("\\[[^]]*]|\\d+", "#"), 1L, Long::sum));
        byFailure.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(12)
                 .forEach(e -> out.printf("  failed %,8d x %s%n", e.getValue(), e.getKey()));
        out.printf("unknown outcomes: %,d stored, %,d absent%n", verification.unknownStored,
                   verification.unknownAbsent);
        out.printf("stored: %,d events of %,d accounts; %,d snapshots%n", verification.events,
                   verification.aggregatesStored, snapshots);
        if (violationCount.sum() == 0) {
            out.printf("RESULT OK seed=%d commands=%d aggregates=%d events=%d seconds=%.1f%n", seed,
                       dispatched.get(), verification.aggregatesStored, verification.events, totalNanos / 1e9);
        } else {
            violations.forEach(v -> out.println("VIOLATION " + v));
            out.printf("RESULT FAIL seed=%d: %,d violations (first %d above); rerun with -Dtorture.seed=%d%n", seed,
                       violationCount.sum(), violations.size(), seed);
        }
        out.flush();
    }
}
