package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.postgresql.ds.PGSimpleDataSource;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ringbus on three nodes, each a JVM of its own ({@link DistributedNodeChild}): the local segment of Axon's
 * {@code DistributedCommandBus} over JGroups TCP on 127.0.0.1, all on one PostgreSQL event store. Commands for 1,000
 * accounts are dispatched on every node, through four phases:
 * <ol>
 *   <li>stable: every account's commands run on one node's ring, every node gets a share, nothing fails;</li>
 *   <li>a node killed with SIGKILL mid-stream, then started again: only commands in flight to it fail, as lost
 *   ({@code CommandBusConnectorCommunicationException}); its share moves to the others and back;</li>
 *   <li>a node shut down gracefully mid-stream: nothing it accepted is refused and nothing is lost; the only
 *   failures allowed are of a command that the new owner handled while the leaving node's last events for the same
 *   account were still on their way to the store (refused at the append: a conflict, retried by the gateway's
 *   {@code RetryScheduler}) and of the commands built on it;</li>
 *   <li>every account's balance asked through the cluster equals what the store holds: no node answers from a copy
 *   cached before another node changed the account.</li>
 * </ol>
 * Throughout: every callback runs once; every acknowledged deposit is stored exactly once, in its account; no deposit
 * is stored twice; every account's sequence numbers are gapless; the balance each acknowledged deposit returned is
 * the sum of the account's deposits stored up to and including it.
 * <p>
 * {@code -Ddistributed.seconds=N} (default 1) is how long each phase's traffic runs around its event; raise it for a
 * longer run by hand, e.g. {@code -Ddistributed.seconds=20}.
 */
class DistributedNodesTest {

    private static final int ACCOUNTS = 1000;
    private static final long SECONDS = Long.getLong("distributed.seconds", 1);

    private static PostgresServer server;
    private static final long T0 = System.nanoTime();
    private final List<Node> started = new ArrayList<>();
    private final Map<Long, String> acknowledged = new ConcurrentHashMap<>();
    private final Map<Long, Long> acknowledgedBalance = new ConcurrentHashMap<>();
    private int incarnations;

    @BeforeAll
    static void startPostgres() {
        server = PostgresServer.startForTests();
    }

    @AfterAll
    static void stopPostgres() {
        if (server != null) {
            server.close();
        }
    }

    @AfterEach
    void killNodes() {
        started.forEach(node -> node.process.destroyForcibly());
    }

    @Test
    void threeNodesKeepEveryInvariantThroughAKillARejoinAndAGracefulLeave() throws Exception {
        int[] ports = {freePort(), freePort(), freePort()};
        String hosts = "127.0.0.1:" + ports[0] + ",127.0.0.1:" + ports[1] + ",127.0.0.1:" + ports[2];
        Node[] nodes = new Node[3];
        for (int i = 0; i < 3; i++) {
            nodes[i] = start("node" + i, ports[i], hosts);
        }
        for (Node node : nodes) {
            node.awaitReady();
        }
        for (Node node : nodes) {
            node.ask("AWAIT 3", "MEMBERS 3");
        }
        log("three nodes joined");
        nodes[0].ask("OPEN 0 " + ACCOUNTS, "OPENED");
        log("accounts opened");

        // 1. stable
        for (Node node : nodes) {
            node.send("RUN 1 " + 400 * SECONDS);
        }
        for (Node node : nodes) {
            node.awaitDone();
        }
        log("stable phase run");
        Map<String, List<DomainEventMessage<?>>> store = checkTheStore("stable");
        assertThat(failures(nodes)).as("failures on a stable cluster").isEmpty();
        Map<String, Set<Object>> nodesOfAccount = new HashMap<>();
        store.forEach((account, events) -> nodesOfAccount.put(
                account, events.stream().map(e -> e.getMetaData().get("node")).collect(Collectors.toSet())));
        nodesOfAccount.forEach((account, handledBy) -> assertThat(handledBy)
                .as("the nodes that handled %s on a stable cluster", account).hasSize(1));
        assertThat(nodesOfAccount.values().stream().flatMap(Set::stream).collect(Collectors.toSet()))
                .as("every node handles a share").containsExactlyInAnyOrder("node0", "node1", "node2");
        log("stable phase checked");
        System.out.printf("DistributedNodesTest stable: %,d acknowledged%n", acknowledged.size());

        // 2. a node killed mid-stream, then started again
        for (Node node : nodes) {
            node.send("RUN 2 -1");
        }
        Thread.sleep(1000 * SECONDS);
        nodes[2].process.destroyForcibly(); // SIGKILL
        assertThat(nodes[2].process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        long killedAt = System.nanoTime();
        nodes[0].ask("AWAIT 2", "MEMBERS 2");
        nodes[1].ask("AWAIT 2", "MEMBERS 2");
        System.out.printf("DistributedNodesTest: the survivors saw the kill after %d ms%n",
                          TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt));
        Thread.sleep(1000 * SECONDS);
        log("kill seen");
        nodes[2] = start("node2", ports[2], hosts);
        nodes[2].awaitReady();
        for (Node node : nodes) {
            node.ask("AWAIT 3", "MEMBERS 3");
        }
        log("node2 rejoined");
        nodes[2].send("RUN 2 -1");
        Thread.sleep(1000 * SECONDS);
        for (Node node : nodes) {
            node.send("STOP");
        }
        for (Node node : nodes) {
            node.awaitDone();
        }
        checkTheStore("after the kill and the rejoin");
        Map<String, Long> kinds = failureKinds(nodes);
        System.out.printf("DistributedNodesTest kill: failures %s%n", kinds);
        assertThat(kinds.keySet()).as("failures around the kill: only commands lost in flight to the killed node")
                                  .isSubsetOf(Set.of("lost"));
        log("kill phase checked");
        assertBalancesAreTheStores(nodes[0], "after the rejoin");
        log("balances checked");
        clearFailures(nodes);

        // 3. a node shut down gracefully mid-stream
        for (Node node : nodes) {
            node.send("RUN 3 -1");
        }
        Thread.sleep(1000 * SECONDS);
        nodes[2].send("STOP");
        nodes[2].awaitDone();
        nodes[2].ask("LEAVE", "LEFT");
        assertThat(nodes[2].process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(nodes[2].process.exitValue()).isZero();
        log("node2 left");
        nodes[0].ask("AWAIT 2", "MEMBERS 2");
        nodes[1].ask("AWAIT 2", "MEMBERS 2");
        Thread.sleep(1000 * SECONDS);
        nodes[0].send("STOP");
        nodes[1].send("STOP");
        nodes[0].awaitDone();
        nodes[1].awaitDone();
        checkTheStore("after the graceful leave");
        kinds = failureKinds(nodes);
        System.out.printf("DistributedNodesTest graceful leave: failures %s%n", kinds);
        assertThat(kinds.keySet())
                .as("failures around a graceful leave: none refused by the leaving node, none lost; only a command "
                            + "that met the leaving node's last events at the append, and those built on it")
                .isSubsetOf(Set.of("conflict", "built-on-conflict"));

        log("graceful leave checked");
        // 4. no stale state
        assertBalancesAreTheStores(nodes[1], "after the graceful leave");
        log("balances checked");
        System.out.printf("DistributedNodesTest: %,d deposits acknowledged over the run, all stored once%n",
                          acknowledged.size());
    }

    private static void log(String what) {
        System.out.printf("DistributedNodesTest %6.1f s: %s%n", (System.nanoTime() - T0) / 1e9, what);
    }

    // --- checks ------------------------------------------------------------------------------------------------------

    /** Reads every account afresh and checks the invariants against what the nodes reported. */
    private Map<String, List<DomainEventMessage<?>>> checkTheStore(String when) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setUrl(server.jdbcUrl());
        JdbcEventStorageEngine reader = PostgresServer.engine(new JdbcTransactionManager(dataSource));
        Map<String, List<DomainEventMessage<?>>> store = new HashMap<>();
        try (Stream<? extends TrackedEventMessage<?>> all = reader.readEvents(null, false)) {
            // every event in the order of the store's global index: each account's in order of sequence number
            all.forEach(event -> {
                DomainEventMessage<?> domainEvent = (DomainEventMessage<?>) event;
                store.computeIfAbsent(domainEvent.getAggregateIdentifier(), a -> new ArrayList<>()).add(domainEvent);
            });
        }
        store.values().forEach(events -> events.sort(Comparator.comparingLong(DomainEventMessage::getSequenceNumber)));
        Map<Long, Integer> storedTimes = new HashMap<>();
        Map<Long, String> storedIn = new HashMap<>();
        Map<Long, Long> balanceAt = new HashMap<>();
        for (int i = 0; i < ACCOUNTS; i++) {
            String account = DistributedNodeChild.account(i);
            List<DomainEventMessage<?>> events = store.getOrDefault(account, List.of());
            long balance = 0;
            for (int s = 0; s < events.size(); s++) {
                DomainEventMessage<?> event = events.get(s);
                assertThat(event.getSequenceNumber()).as("sequence numbers of %s %s", account, when)
                                                     .isEqualTo((long) s);
                if (event.getPayload() instanceof Deposited deposited) {
                    balance += deposited.amount();
                    storedTimes.merge(deposited.amount(), 1, Integer::sum);
                    storedIn.put(deposited.amount(), account);
                    balanceAt.put(deposited.amount(), balance);
                }
            }
            assertThat(events).as("%s %s", account, when).isNotEmpty();
        }
        storedTimes.forEach((amount, times) -> assertThat(times)
                .as("times deposit %d is stored %s", amount, when).isEqualTo(1));
        acknowledged.forEach((amount, account) -> {
            assertThat(storedIn.get(amount)).as("acknowledged deposit %d of %s %s", amount, account, when)
                                            .isEqualTo(account);
            assertThat(acknowledgedBalance.get(amount))
                    .as("the balance deposit %d returned, against the store's deposits up to it, %s", amount, when)
                    .isEqualTo(balanceAt.get(amount));
        });
        return store;
    }

    /** Asks every account's balance through the cluster: each must be what the store holds. */
    private void assertBalancesAreTheStores(Node node, String when) throws Exception {
        Map<String, Long> answered = node.balances();
        log("balances asked");
        Map<String, List<DomainEventMessage<?>>> store = checkTheStore(when);
        int stale = 0;
        for (int i = 0; i < ACCOUNTS; i++) {
            String account = DistributedNodeChild.account(i);
            long stored = store.get(account).stream().map(DomainEventMessage::getPayload)
                               .filter(Deposited.class::isInstance)
                               .mapToLong(p -> ((Deposited) p).amount()).sum();
            if (answered.get(account) != stored) {
                stale++;
            }
        }
        assertThat(stale).as("accounts whose balance, asked through the cluster %s, is not the store's", when)
                         .isZero();
    }

    private static List<String> failures(Node... nodes) {
        List<String> all = new ArrayList<>();
        for (Node node : nodes) {
            all.addAll(node.failures);
        }
        return all;
    }

    private static Map<String, Long> failureKinds(Node... nodes) {
        return failures(nodes).stream().collect(Collectors.groupingBy(f -> f.split(" ")[3], Collectors.counting()));
    }

    private static void clearFailures(Node... nodes) {
        for (Node node : nodes) {
            node.failures.clear();
        }
    }

    // --- the nodes ---------------------------------------------------------------------------------------------------

    private Node start(String name, int port, String hosts) throws IOException {
        int incarnation = incarnations++;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder builder = new ProcessBuilder(
                java, "-Xmx384m",
                "-cp", System.getProperty("java.class.path"),
                "-Daxon.axonserver.enabled=false", "-DAXONIQ_UPDATE_CHECKER_DISABLED=true",
                "-Djava.net.preferIPv4Stack=true", "-Daccounts=" + ACCOUNTS,
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                DistributedNodeChild.class.getName(),
                server.jdbcUrl(), name, Integer.toString(incarnation), Integer.toString(port), hosts);
        builder.environment().put("AXONIQ_UPDATE_CHECKER_DISABLED", "true");
        builder.redirectError(ProcessBuilder.Redirect.appendTo(
                new File("target/distributed-" + name + "-" + incarnation + ".err")));
        Node node = new Node(name, builder.start());
        started.add(node);
        return node;
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    /** A {@link DistributedNodeChild} process, and what it reported. */
    private final class Node {

        final String name;
        final Process process;
        final PrintStream in;
        final BlockingQueue<String> answers = new LinkedBlockingQueue<>();
        final List<String> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        final Set<Long> reported = ConcurrentHashMap.newKeySet();

        Node(String name, Process process) {
            this.name = name;
            this.process = process;
            this.in = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
            Thread reader = new Thread(this::read, "distributed-" + name + "-reader");
            reader.setDaemon(true);
            reader.start();
        }

        private void read() {
            try (BufferedReader lines = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    String[] parts = line.split(" ");
                    if (parts[0].equals("OK") && parts.length == 5 && parts[4].equals(".")) {
                        long amount = Long.parseLong(parts[1]);
                        callbackOnce(amount);
                        acknowledged.put(amount, parts[2]);
                        acknowledgedBalance.put(amount, Long.parseLong(parts[3]));
                    } else if (parts[0].equals("FAIL") && parts.length == 4 && parts[3].equals(".")) {
                        callbackOnce(Long.parseLong(parts[1]));
                        failures.add(name + " " + line);
                    } else if (parts[0].equals("FAIL") || parts[0].equals("OK")) {
                        // cut short by a kill
                    } else {
                        answers.add(line);
                    }
                }
            } catch (IOException ignored) {
                // the process ended
            }
        }

        private void callbackOnce(long amount) {
            if (!reported.add(amount)) {
                answers.add("TWICE " + amount);
            }
        }

        void send(String command) {
            in.println(command);
        }

        String next(long seconds) throws InterruptedException {
            String answer = answers.poll(seconds, TimeUnit.SECONDS);
            assertThat(answer).as("%s's answer within %d s", name, seconds).isNotNull();
            assertThat(answer).as("%s's answer", name).doesNotStartWith("TWICE");
            return answer;
        }

        void ask(String command, String expected) throws InterruptedException {
            send(command);
            assertThat(next(60)).as("%s's answer to %s", name, command).isEqualTo(expected);
        }

        void awaitReady() throws InterruptedException {
            assertThat(next(60)).as("%s starting", name).startsWith("READY");
        }

        void awaitDone() throws InterruptedException {
            String done = next(60 + 2 * SECONDS);
            String[] parts = done.split(" ");
            assertThat(parts[0]).as("%s's answer at the end of a run", name).isEqualTo("DONE");
            assertThat(parts[2]).as("%s: callbacks run, against commands dispatched", name).isEqualTo(parts[1]);
        }

        Map<String, Long> balances() throws InterruptedException {
            send("BALANCES 0 " + ACCOUNTS);
            Map<String, Long> balances = new HashMap<>();
            for (String line = next(120); !line.equals("BALANCES"); line = next(120)) {
                String[] parts = line.split(" ");
                assertThat(parts[0]).as("%s's balances", name).isEqualTo("BALANCE");
                balances.put(parts[1], Long.parseLong(parts[2]));
            }
            return balances;
        }
    }
}
