package io.github.ringbus.benchmarks.distributed;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.benchmarks.Account;
import io.github.ringbus.distributed.DistributedRingCommandBus;
import org.HdrHistogram.Histogram;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.serialization.json.JacksonSerializer;
import org.axonframework.updates.configuration.CommandLineUsagePropertyProvider;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

/**
 * What routing through Axon's {@code DistributedCommandBus} costs ringbus, on one machine: commands/s of
 * <ol>
 *   <li>{@code ring}: a ringbus alone (the baseline);</li>
 *   <li>{@code 1 node}: the same ring as the local segment of a {@code DistributedRingCommandBus} with no other node
 *   (every command is of the node's own share: the local short-cut);</li>
 *   <li>{@code 1 node, every command a hop}: the same without the local short-cut: every command goes through the
 *   JGroups connector (serialized, sent to the node itself over JGroups, answered), what a remote command costs the
 *   two machines together;</li>
 *   <li>{@code 3 nodes, one dispatching}: three node JVMs, all commands dispatched on one (two thirds travel to
 *   another node);</li>
 *   <li>{@code 3 nodes, all dispatching}: the same, commands dispatched on every node, summed;</li>
 * </ol>
 * and the {@code sendAndWait} round trip from one thread to an account of the dispatching node and to one of another
 * node (the remote hop). Each application: {@code Account} on an in-memory event store per node, 1,000 accounts,
 * deposits to random accounts from dispatching threads with a window of commands in flight.
 * <p>
 * Every node runs on the same machine: with 2 cores, three JVMs share them, so this measures the overhead of routing,
 * never how N machines scale.
 * <pre>
 *   java -cp benchmarks/target/benchmarks.jar io.github.ringbus.benchmarks.distributed.DistributedMain \
 *        [--seconds 5] [--iterations 3] [--threads 2]
 * </pre>
 */
public final class DistributedMain {

    private static final int ACCOUNTS = 1_000;
    private static final int WINDOW = 256;

    private DistributedMain() {
    }

    public static void main(String[] args) {
        System.setProperty(CommandLineUsagePropertyProvider.DISABLED_KEY, "true");
        int status = 0;
        try {
            if (args.length > 0 && args[0].equals("node")) {
                node(args);
            } else {
                run(args);
            }
        } catch (Throwable failure) {
            failure.printStackTrace();
            status = 1;
        } finally {
            CHILDREN.forEach(child -> child.process.destroyForcibly());
        }
        // the nodes' JGroups and ring threads would keep the JVM alive after a failure
        System.exit(status);
    }

    private static final List<Child> CHILDREN = new java.util.concurrent.CopyOnWriteArrayList<>();

    private static void run(String[] args) throws Exception {
        List<String> options = Arrays.asList(args);
        int seconds = option(options, "--seconds", 5);
        int iterations = option(options, "--iterations", 3);
        int threads = option(options, "--threads", 2);
        System.out.printf(Locale.ROOT, "DistributedMain: %d iterations of %d s after one of warm-up, %d dispatching "
                                       + "threads, %d in flight each; %d cores, %s%n", iterations, seconds, threads,
                          WINDOW, Runtime.getRuntime().availableProcessors(), System.getProperty("java.version"));

        Configuration ring = application(c -> RingCommandBus.builder().eventStore(c.eventStore()).build());
        openAccounts(ring.commandBus());
        report("ring alone", measure(ring.commandBus(), threads, seconds, iterations));
        ring.shutdown();

        int port = freePort();
        Configuration single = node("single", port, List.of("127.0.0.1:" + port), true);
        openAccounts(single.commandBus());
        report("1 node", measure(single.commandBus(), threads, seconds, iterations));
        single.shutdown();

        port = freePort();
        Configuration hop = node("hop", port, List.of("127.0.0.1:" + port), false);
        openAccounts(hop.commandBus());
        report("1 node, every command a hop", measure(hop.commandBus(), threads, seconds, iterations));
        hop.shutdown();

        int[] ports = {freePort(), freePort(), freePort()};
        List<String> hosts = List.of("127.0.0.1:" + ports[0], "127.0.0.1:" + ports[1], "127.0.0.1:" + ports[2]);
        List<Child> children = List.of(Child.start("n1", ports[1], hosts, threads),
                                       Child.start("n2", ports[2], hosts, threads));
        Configuration driver = node("n0", ports[0], hosts);
        DistributedRingCommandBus bus = (DistributedRingCommandBus) driver.commandBus();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (bus.consistentHash().getMembers().size() < 3 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        if (bus.consistentHash().getMembers().size() < 3) {
            throw new IllegalStateException("three nodes did not meet within 60 s: " + bus.consistentHash());
        }
        for (Child child : children) {
            child.awaitLine("READY");
        }
        openAccounts(driver.commandBus());
        report("3 nodes, one dispatching", measure(driver.commandBus(), threads, seconds, iterations));

        double[] all = new double[iterations];
        measureOnce(driver.commandBus(), threads, seconds); // warm-up of the children's dispatchers too
        for (int i = -1; i < iterations; i++) {
            for (Child child : children) {
                child.send("RUN " + seconds);
            }
            double own = measureOnce(driver.commandBus(), threads, seconds);
            double others = 0;
            for (Child child : children) {
                others += Double.parseDouble(child.awaitLine("COUNT").substring("COUNT ".length()));
            }
            if (i >= 0) {
                all[i] = own + others;
            }
        }
        report("3 nodes, all dispatching", all);

        roundTrips(bus, driver.commandBus());
        for (Child child : children) {
            child.send("EXIT");
            child.process.waitFor(60, TimeUnit.SECONDS);
        }
        driver.shutdown();
    }

    // --- measuring ---------------------------------------------------------------------------------------------------

    private static double[] measure(CommandBus bus, int threads, int seconds, int iterations) throws Exception {
        measureOnce(bus, threads, seconds); // warm-up
        double[] perSecond = new double[iterations];
        for (int i = 0; i < iterations; i++) {
            perSecond[i] = measureOnce(bus, threads, seconds);
        }
        return perSecond;
    }

    /** Deposits to random accounts from {@code threads} threads for {@code seconds}: completed commands per second. */
    static double measureOnce(CommandBus bus, int threads, int seconds) throws InterruptedException {
        LongAdder completed = new LongAdder();
        LongAdder failed = new LongAdder();
        AtomicBoolean running = new AtomicBoolean(true);
        CountDownLatch done = new CountDownLatch(threads);
        for (int t = 0; t < threads; t++) {
            Thread thread = new Thread(() -> {
                Semaphore window = new Semaphore(WINDOW);
                while (running.get()) {
                    window.acquireUninterruptibly();
                    String account = accountId(ThreadLocalRandom.current().nextInt(ACCOUNTS));
                    bus.dispatch(GenericCommandMessage.asCommandMessage(new Account.Deposit(account, 1)),
                                 (command, result) -> {
                                     (result.isExceptional() ? failed : completed).increment();
                                     window.release();
                                 });
                }
                window.acquireUninterruptibly(WINDOW);
                done.countDown();
            }, "dispatcher-" + t);
            thread.start();
        }
        long start = System.nanoTime();
        Thread.sleep(TimeUnit.SECONDS.toMillis(seconds));
        long count = completed.sum();
        long elapsed = System.nanoTime() - start;
        running.set(false);
        done.await(60, TimeUnit.SECONDS);
        if (failed.sum() > 0) {
            throw new IllegalStateException(failed.sum() + " commands failed");
        }
        return count * 1e9 / elapsed;
    }

    /** sendAndWait from one thread, to accounts of this node and of the others. */
    private static void roundTrips(DistributedRingCommandBus bus, CommandBus commandBus) throws Exception {
        List<String> local = new ArrayList<>();
        List<String> remote = new ArrayList<>();
        for (int i = 0; i < ACCOUNTS; i++) {
            CommandMessage<?> probe = GenericCommandMessage.asCommandMessage(new Account.Deposit(accountId(i), 1));
            (bus.isOwnedHere(probe) ? local : remote).add(accountId(i));
        }
        Histogram localTimes = roundTrips(commandBus, local, 20_000);
        Histogram remoteTimes = roundTrips(commandBus, remote, 20_000);
        System.out.printf(Locale.ROOT, "round trip (sendAndWait, 1 thread), 20,000 each after 20,000 of warm-up: "
                                       + "own node p50 %.1f us, p99 %.1f us; remote hop p50 %.1f us, p99 %.1f us%n",
                          localTimes.getValueAtPercentile(50) / 1e3, localTimes.getValueAtPercentile(99) / 1e3,
                          remoteTimes.getValueAtPercentile(50) / 1e3, remoteTimes.getValueAtPercentile(99) / 1e3);
    }

    private static Histogram roundTrips(CommandBus bus, List<String> accounts, int count) throws Exception {
        Histogram histogram = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        for (int i = -count; i < count; i++) {
            String account = accounts.get(Math.floorMod(i, accounts.size()));
            long start = System.nanoTime();
            FutureCallback<Object, Object> callback = new FutureCallback<>();
            bus.dispatch(GenericCommandMessage.asCommandMessage(new Account.Deposit(account, 1)), callback);
            if (callback.getResult().isExceptional()) {
                throw new IllegalStateException(callback.getResult().exceptionResult());
            }
            if (i >= 0) {
                histogram.recordValue(System.nanoTime() - start);
            }
        }
        return histogram;
    }

    private static void report(String what, double[] perSecond) {
        double[] sorted = perSecond.clone();
        Arrays.sort(sorted);
        System.out.printf(Locale.ROOT, "%-32s median %,10.0f commands/s (range %,.0f-%,.0f over %d iterations)%n",
                          what, sorted[sorted.length / 2], sorted[0], sorted[sorted.length - 1], sorted.length);
    }

    // --- the applications --------------------------------------------------------------------------------------------

    private static String accountId(int index) {
        return "account-" + index;
    }

    private static Configuration application(
            java.util.function.Function<Configuration, CommandBus> commandBus) {
        return DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                                                        .storageEngine(new InMemoryEventStorageEngine())
                                                        .build())
                .configureAggregate(Account.class)
                .configureCommandBus(commandBus::apply)
                .start();
    }

    private static Configuration node(String name, int port, List<String> hosts) {
        return node(name, port, hosts, true);
    }

    private static Configuration node(String name, int port, List<String> hosts, boolean localShortcut) {
        return application(c -> DistributedRingCommandBus.builder()
                .localSegment(RingCommandBus.builder().eventStore(c.eventStore()).build())
                .serializer(JacksonSerializer.defaultSerializer())
                .clusterName("ringbus-benchmark-" + hosts.hashCode())
                .nodeName(name)
                .bind("127.0.0.1", port)
                .initialHosts(hosts)
                .leaveGracePeriod(Duration.ofMillis(200))
                .localShortcut(localShortcut)
                .build());
    }

    private static void openAccounts(CommandBus bus) throws Exception {
        for (int i = 0; i < ACCOUNTS; i++) {
            FutureCallback<Object, Object> opened = new FutureCallback<>();
            bus.dispatch(GenericCommandMessage.asCommandMessage(new Account.OpenAccount(accountId(i))), opened);
            if (opened.getResult().isExceptional()) {
                throw new IllegalStateException(opened.getResult().exceptionResult());
            }
        }
    }

    /** A node in a JVM of its own: joins, then dispatches on {@code RUN seconds} and answers {@code COUNT n}. */
    private static void node(String[] args) throws Exception {
        String name = args[1];
        int port = Integer.parseInt(args[2]);
        List<String> hosts = Arrays.asList(args[3].split(","));
        int threads = Integer.parseInt(args[4]);
        Configuration node = node(name, port, hosts);
        PrintStream out = System.out;
        out.println("READY");
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.startsWith("RUN ")) {
                out.println("COUNT " + measureOnce(node.commandBus(), threads, Integer.parseInt(line.substring(4))));
            } else if (line.equals("EXIT")) {
                break;
            }
        }
        node.shutdown();
    }

    private static int option(List<String> options, String name, int otherwise) {
        int at = options.indexOf(name);
        return at < 0 ? otherwise : Integer.parseInt(options.get(at + 1));
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private record Child(Process process, PrintStream in, BufferedReader out) {

        static Child start(String name, int port, List<String> hosts, int threads) throws IOException {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Process started = new ProcessBuilder(java, "-Xmx512m", "-Djava.net.preferIPv4Stack=true", "-cp",
                                                 System.getProperty("java.class.path"),
                                                 DistributedMain.class.getName(), "node", name,
                                                 Integer.toString(port), String.join(",", hosts),
                                                 Integer.toString(threads))
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            Child child = new Child(started, new PrintStream(started.getOutputStream(), true, StandardCharsets.UTF_8),
                                    new BufferedReader(new InputStreamReader(started.getInputStream(),
                                                                             StandardCharsets.UTF_8)));
            CHILDREN.add(child);
            return child;
        }

        void send(String line) {
            in.println(line);
        }

        String awaitLine(String prefix) throws IOException {
            for (String line = out.readLine(); line != null; line = out.readLine()) {
                if (line.startsWith(prefix)) {
                    return line;
                }
            }
            throw new IllegalStateException("the node ended before it said " + prefix);
        }
    }
}
