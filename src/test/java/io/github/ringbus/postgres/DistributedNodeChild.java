package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.distributed.DistributedRingCommandBus;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.GetBalance;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.distributed.CommandBusConnectorCommunicationException;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.commandhandling.gateway.IntervalRetryScheduler;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * One node of {@link DistributedNodesTest}, in a JVM of its own: a ringbus on Axon's JDBC engine (the shared
 * PostgreSQL server) as the local segment of a {@link DistributedRingCommandBus} over JGroups TCP on 127.0.0.1, in a
 * plain Axon configuration. Every event it stores carries the node's name in its metadata ({@code node}).
 * <p>
 * It dispatches through a gateway with Axon's {@code IntervalRetryScheduler}, which retries a command that failed
 * on a conflict at the append (a {@code ConcurrencyException}: nothing of it was stored) but not one whose node
 * died before it replied ({@code CommandBusConnectorCommunicationException}: it may have been stored, and a deposit
 * must not be stored twice).
 * <p>
 * Driven by lines on standard input, answered on standard output, one line each:
 * <ul>
 *   <li>{@code AWAIT n}: waits until its consistent hash has n members: {@code MEMBERS n} (or {@code MEMBERS? m});</li>
 *   <li>{@code OPEN from to}: opens those accounts: {@code OPENED};</li>
 *   <li>{@code RUN run count}: 2 dispatching threads each send {@code count} deposits (-1: until {@code STOP}) to
 *   random accounts, 32 in flight each; each callback prints {@code OK amount account balance .} or
 *   {@code FAIL amount kind .} (kind: conflict, built-on-conflict, refused, lost, other:...), then {@code DONE dispatched completed}
 *   once every callback ran; a second callback of one command prints {@code TWICE amount};</li>
 *   <li>{@code BALANCES from to}: asks each account's balance through the cluster: {@code BALANCE account n} each,
 *   then {@code BALANCES};</li>
 *   <li>{@code LEAVE}: shuts the node down gracefully (Axon's lifecycle): {@code LEFT}, and the process ends.</li>
 * </ul>
 * Arguments: JDBC URL, node name, incarnation (unique per process started), TCP port, all nodes' host:port (comma
 * separated).
 */
public final class DistributedNodeChild {

    private static final int DISPATCHERS = 2;
    private static final int WINDOW = 32;

    private final Configuration axon;
    private final CommandGateway gateway;
    private final DistributedRingCommandBus bus;
    private final PrintStream out = System.out;
    private final int incarnation;
    private final AtomicBoolean stop = new AtomicBoolean();
    private final List<Thread> dispatchers = new ArrayList<>();
    private final AtomicLong dispatched = new AtomicLong();
    private final AtomicLong completed = new AtomicLong();

    private DistributedNodeChild(Configuration axon, int incarnation) {
        this.axon = axon;
        this.incarnation = incarnation;
        this.bus = (DistributedRingCommandBus) axon.commandBus();
        this.gateway = DefaultCommandGateway.builder()
                .commandBus(bus)
                .retryScheduler(IntervalRetryScheduler.builder()
                        .retryExecutor(Executors.newSingleThreadScheduledExecutor())
                        .retryInterval(50)
                        .maxRetryCount(5)
                        .addNonTransientFailurePredicate(
                                failure -> failure instanceof CommandBusConnectorCommunicationException)
                        .build())
                .build();
    }

    /** The account with this index. */
    static String account(int index) {
        return "acc-" + index;
    }

    /** A deposit's amount: unique over every process, run, dispatcher and command of a test. */
    static long amount(int incarnation, int run, int dispatcher, long sequence) {
        return (incarnation + 1L) * 100_000_000_000L + run * 1_000_000_000L + dispatcher * 100_000_000L + sequence;
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String name = args[1];
        int incarnation = Integer.parseInt(args[2]);
        int port = Integer.parseInt(args[3]);
        List<String> hosts = Arrays.asList(args[4].split(","));

        HikariDataSource pool = PostgresServer.pool(url, 4);
        JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
        Configuration axon = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                                                        .storageEngine(PostgresServer.engine(transactions))
                                                        .build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> DistributedRingCommandBus.builder()
                        .localSegment(RingCommandBus.builder()
                                                    .eventStore(c.eventStore())
                                                    .transactionManager(transactions)
                                                    .threadNamePrefix("ring-" + name)
                                                    .handlerInterceptor(new CorrelationDataInterceptor<CommandMessage<?>>(
                                                            List.of(message -> Map.of("node", name))))
                                                    .build())
                        .serializer(PostgresServer.SERIALIZER)
                        .clusterName("ringbus-test")
                        .nodeName(name)
                        .bind("127.0.0.1", port)
                        .initialHosts(hosts)
                        .leaveGracePeriod(Duration.ofMillis(500))
                        .failureDetectionTimeout(Duration.ofSeconds(2))
                        .build())
                .start();
        new DistributedNodeChild(axon, incarnation).serve();
    }

    private void serve() throws Exception {
        out.println("READY " + bus.nodeName());
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] words = line.split(" ");
            switch (words[0]) {
                case "AWAIT" -> awaitMembers(Integer.parseInt(words[1]));
                case "OPEN" -> open(Integer.parseInt(words[1]), Integer.parseInt(words[2]));
                case "RUN" -> run(Integer.parseInt(words[1]), Long.parseLong(words[2]));
                case "STOP" -> stop.set(true);
                case "BALANCES" -> balances(Integer.parseInt(words[1]), Integer.parseInt(words[2]));
                case "LEAVE" -> {
                    axon.shutdown();
                    out.println("LEFT");
                    out.flush();
                    System.exit(0);
                }
                default -> out.println("UNKNOWN " + line);
            }
        }
    }

    private void awaitMembers(int members) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (bus.consistentHash().getMembers().size() != members && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        int now = bus.consistentHash().getMembers().size();
        out.println(now == members ? "MEMBERS " + members : "MEMBERS? " + now);
    }

    private void open(int from, int to) {
        Semaphore window = new Semaphore(64);
        List<CompletableFuture<Object>> opened = new ArrayList<>();
        for (int i = from; i < to; i++) {
            window.acquireUninterruptibly();
            opened.add(gateway.send(new Open(account(i))).whenComplete((r, e) -> window.release()));
        }
        CompletableFuture.allOf(opened.toArray(CompletableFuture[]::new)).join();
        out.println("OPENED");
    }

    private void balances(int from, int to) {
        Semaphore window = new Semaphore(64);
        List<CompletableFuture<Object>> asked = new ArrayList<>();
        for (int i = from; i < to; i++) {
            String account = account(i);
            window.acquireUninterruptibly();
            asked.add(gateway.send(new GetBalance(account)).whenComplete((balance, failure) -> {
                out.println(failure == null ? "BALANCE " + account + " " + balance : "BALANCE? " + account);
                window.release();
            }));
        }
        CompletableFuture.allOf(asked.toArray(CompletableFuture[]::new)).join();
        out.println("BALANCES");
    }

    private void run(int run, long count) {
        stop.set(false);
        dispatched.set(0);
        completed.set(0);
        dispatchers.clear();
        Random random = new Random(incarnation * 1_000L + run);
        int accounts = Integer.getInteger("accounts", 1000);
        for (int d = 0; d < DISPATCHERS; d++) {
            int dispatcher = d;
            long seed = random.nextLong();
            Thread thread = new Thread(() -> dispatch(run, dispatcher, count, accounts, new Random(seed)),
                                       "dispatcher-" + d);
            dispatchers.add(thread);
            thread.start();
        }
        Thread waiter = new Thread(() -> {
            for (Thread thread : dispatchers) {
                try {
                    thread.join();
                } catch (InterruptedException e) {
                    return;
                }
            }
            out.println("DONE " + dispatched.get() + " " + completed.get());
        }, "run-" + run);
        waiter.start();
    }

    private void dispatch(int run, int dispatcher, long count, int accounts, Random random) {
        Semaphore window = new Semaphore(WINDOW);
        for (long sequence = 0; count < 0 ? !stop.get() : sequence < count && !stop.get(); sequence++) {
            window.acquireUninterruptibly();
            String account = account(random.nextInt(accounts));
            long amount = amount(incarnation, run, dispatcher, sequence);
            AtomicBoolean called = new AtomicBoolean();
            dispatched.incrementAndGet();
            gateway.send(new Deposit(account, amount), (CommandMessage<? extends Deposit> command,
                                                         CommandResultMessage<?> result) -> {
                if (!called.compareAndSet(false, true)) {
                    out.println("TWICE " + amount);
                    return;
                }
                try {
                    if (result.isExceptional()) {
                        out.println("FAIL " + amount + " " + kind(result.exceptionResult()) + " .");
                    } else {
                        out.println("OK " + amount + " " + account + " " + result.getPayload() + " .");
                    }
                } finally {
                    completed.incrementAndGet();
                    window.release();
                }
            });
        }
        // every callback of this dispatcher has run once all its permits are back
        window.acquireUninterruptibly(WINDOW);
    }

    /** What a failure was, from the exception or (for a remote one) its description. */
    static String kind(Throwable failure) {
        StringBuilder chain = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            chain.append(t.getClass().getName()).append(' ').append(t.getMessage()).append(' ');
        }
        String text = chain.toString();
        if (text.contains("ConcurrencyException") || text.contains("AggregateIdentifierAlreadyExists")) {
            return "conflict";
        }
        // StoreStage.poisoned(): "... of aggregate [x] that failed to be stored (or whose commit had an unknown
        // outcome); it is rejected ..." (matched on its first words: the text once ended "stored; it is rejected").
        if (text.contains("that failed to be stored")) {
            return "built-on-conflict"; // handled on top of a conflicting command's events, on the same node
        }
        if (text.contains("ShutdownInProgressException")) {
            return "refused";
        }
        if (text.contains("CommandBusConnectorCommunicationException")) {
            return "lost";
        }
        return "other:" + text.replace(' ', '_').replace('\n', '_');
    }
}
