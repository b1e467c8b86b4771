package io.github.ringbus.postgres;

import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Withdraw;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Group commit against a real PostgreSQL: cold start, durability of acknowledged commands (also across a shutdown
 * under load) and batching of many commands per commit.
 */
class PostgresGroupCommitTest extends OnPostgres {

    @Test
    void coldStartReadsTheAggregateFromPostgres() {
        try (PostgresRing first = new PostgresRing(server)) {
            first.sendAndWait(new Open("cold"));
            first.sendAndWait(new Deposit("cold", 5));
            first.sendAndWait(new Deposit("cold", 7));
        }

        try (PostgresRing second = new PostgresRing(server)) {
            assertThat(second.bus.isRunning()).isTrue();
            CommandResultMessage<Object> result = second.sendAndWait(new Deposit("cold", 1));

            assertThat(result.isExceptional()).as("%s", result.optionalExceptionResult()).isFalse();
            assertThat(result.getPayload()).isEqualTo(13L);
        }
        assertThat(PostgresRing.readFresh(server, "cold"))
                .extracting(DomainEventMessage::getSequenceNumber).containsExactly(0L, 1L, 2L, 3L);
        assertThat(PostgresRing.storedDeposits(server, "cold")).containsExactly(5L, 7L, 1L);
    }

    /** Opens the account and deposits 150 times: more events than one batch of the engine's reads (100). */
    private static void storeAccountWith151Events(String account) {
        try (PostgresRing first = new PostgresRing(server)) {
            first.sendAndWait(new Open(account));
            for (int i = 1; i <= 150; i++) {
                first.sendAndWait(new Deposit(account, 1));
            }
        }
    }

    /**
     * Axon's JDBC engine reads the snapshot and then the events (in batches), each in a transaction of its own when
     * none is under way; ringbus runs the whole read in one transaction of its read transaction manager (by default
     * its transaction manager): one connection taken, one commit.
     */
    @Test
    void aMissingAggregateIsReadInOneTransaction() {
        storeAccountWith151Events("one-read");

        try (PostgresRing second = PostgresRing.readingInTransactions(
                server, b -> b.topology(Topology.COMPACT).handlerThreads(1))) {
            second.connectionsTaken.clear();
            assertThat(second.sendAndWait(new Deposit("one-read", 1)).getPayload()).isEqualTo(151L);

            assertThat(second.connectionsTaken.get("ringbus-preload-handle"))
                    .as("connections the preload stage took to read the aggregate").hasValue(1);
            assertThat(second.commitsSent.get("ringbus-preload-handle"))
                    .as("commits the preload stage sent for the read").hasValue(1);
        }
    }

    /**
     * Reading in {@link io.github.ringbus.jdbc.JdbcTransactionManager#autoCommitReads()}, the bus reads a missing
     * aggregate on one connection in auto-commit mode: the snapshot look-up and every batch of events on that
     * connection, and no {@code COMMIT}, a round trip fewer per read.
     */
    @Test
    void aMissingAggregateIsReadOnOneConnectionWithoutACommitInAutoCommitReads() {
        storeAccountWith151Events("no-commit-read");

        try (PostgresRing second = new PostgresRing(server, null, b -> b.topology(Topology.COMPACT)
                                                                         .handlerThreads(1))) {
            second.connectionsTaken.clear();
            assertThat(second.sendAndWait(new Deposit("no-commit-read", 1)).getPayload()).isEqualTo(151L);

            assertThat(second.connectionsTaken.get("ringbus-preload-handle"))
                    .as("connections the preload stage took to read the aggregate").hasValue(1);
            assertThat(second.commitsSent.get("ringbus-preload-handle"))
                    .as("commits the preload stage sent for the read").isNull();
            assertThat(second.commitsSent.values()).as("the store stage's commit").hasSize(1);
        }
        assertThat(PostgresRing.storedDeposits(server, "no-commit-read")).hasSize(151);
    }

    @Test
    void acknowledgedCommandsAreInTheDatabaseAndFailedOnesLeaveNothingWithManyCommandsPerCommit()
            throws Exception {
        int accounts = 20;
        int threads = 4;
        int perThread = 400;
        try (PostgresRing ring = new PostgresRing(server)) {
            for (int i = 0; i < accounts; i++) {
                ring.sendAndWait(new Open("load-" + i));
            }
            int committedBefore = ring.storeTransactions.committed.get();
            int batchesBefore = ring.batches().size();

            Map<Long, CompletableFuture<CommandResultMessage<Object>>> deposits = new ConcurrentHashMap<>();
            List<CompletableFuture<CommandResultMessage<Object>>> failing = new ArrayList<>();
            AtomicLong nextAmount = new AtomicLong(1);
            List<Thread> dispatchers = new ArrayList<>();
            List<List<CompletableFuture<CommandResultMessage<Object>>>> failingPerThread = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                List<CompletableFuture<CommandResultMessage<Object>>> mine = new ArrayList<>();
                failingPerThread.add(mine);
                int thread = t;
                dispatchers.add(new Thread(() -> {
                    for (int i = 0; i < perThread; i++) {
                        String account = "load-" + ((thread * perThread + i) % accounts);
                        long amount = nextAmount.getAndIncrement();
                        if (i % 7 == 3) {
                            // Applies an event, then fails: nothing of it may be stored.
                            mine.add(ring.send(new DepositThenFail(account, amount)));
                        } else if (i % 11 == 5) {
                            mine.add(ring.send(new Withdraw(account, Long.MAX_VALUE)));
                        } else {
                            deposits.put(amount, ring.send(new Deposit(account, amount)));
                        }
                    }
                }));
            }
            dispatchers.forEach(Thread::start);
            for (Thread dispatcher : dispatchers) {
                dispatcher.join();
            }
            failingPerThread.forEach(failing::addAll);
            CompletableFuture.allOf(deposits.values().toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
            CompletableFuture.allOf(failing.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);

            assertThat(failing).allSatisfy(f -> assertThat(f.join().isExceptional()).isTrue());
            assertThat(deposits.values()).allSatisfy(f -> assertThat(f.join().isExceptional())
                    .as("%s", f.join().optionalExceptionResult()).isFalse());

            // A fresh reader finds exactly the acknowledged deposits: every one of them, and no failed command's.
            Set<Long> stored = new TreeSet<>();
            for (int i = 0; i < accounts; i++) {
                List<DomainEventMessage<?>> events = PostgresRing.readFresh(server, "load-" + i);
                assertThat(events).extracting(DomainEventMessage::getSequenceNumber)
                                  .containsExactlyElementsOf(LongStream.range(0, events.size()).boxed()
                                                                       .collect(Collectors.toList()));
                assertThat(events.get(0).getPayload()).isEqualTo(new Opened("load-" + i));
                stored.addAll(PostgresRing.storedDeposits(server, "load-" + i));
            }
            assertThat(stored).isEqualTo(new TreeSet<>(deposits.keySet()));

            // Batching is real: many commands per commit.
            int commands = deposits.size();
            int commits = ring.storeTransactions.committed.get() - committedBefore;
            List<int[]> batches = ring.batches().subList(batchesBefore, ring.batches().size());
            int largest = batches.stream().mapToInt(b -> b[0]).max().orElse(0);
            System.out.printf("PostgreSQL group commit: %d successful commands in %d commits "
                                      + "(%.1f per commit, largest batch %d)%n",
                              commands, commits, (double) commands / commits, largest);
            assertThat(batches.stream().mapToInt(b -> b[0]).sum()).isEqualTo(commands);
            assertThat(commits).isEqualTo(batches.size());
            assertThat(commits).isLessThanOrEqualTo(commands / 5);
            assertThat(largest).isGreaterThanOrEqualTo(20);
        }
    }

    @Test
    void shutdownUnderLoadLeavesExactlyTheAcknowledgedCommandsInTheDatabase() throws Exception {
        int accounts = 20;
        PostgresRing ring = new PostgresRing(server);
        for (int i = 0; i < accounts; i++) {
            ring.sendAndWait(new Open("stop-" + i));
        }
        Map<Long, String> accountOf = new ConcurrentHashMap<>();
        Map<Long, CompletableFuture<CommandResultMessage<Object>>> results = new ConcurrentHashMap<>();
        AtomicLong nextAmount = new AtomicLong(1);
        AtomicLong acknowledged = new AtomicLong();
        AtomicBoolean refused = new AtomicBoolean();
        List<Thread> dispatchers = new ArrayList<>();
        for (int t = 0; t < 4; t++) {
            dispatchers.add(new Thread(() -> {
                for (int i = 0; i < 5_000 && !refused.get(); i++) {
                    long amount = nextAmount.getAndIncrement();
                    String account = "stop-" + (amount % accounts);
                    accountOf.put(amount, account);
                    CompletableFuture<CommandResultMessage<Object>> result = ring.send(new Deposit(account, amount));
                    result.thenAccept(r -> {
                        if (!r.isExceptional()) {
                            acknowledged.incrementAndGet();
                        } else if (r.exceptionResult() instanceof ShutdownInProgressException) {
                            refused.set(true);
                        }
                    });
                    results.put(amount, result);
                }
            }));
        }
        dispatchers.forEach(Thread::start);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (acknowledged.get() < 300 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        ring.close(); // shuts the bus down mid-stream: dispatchers are still sending
        for (Thread dispatcher : dispatchers) {
            dispatcher.join();
        }
        CompletableFuture.allOf(results.values().toArray(new CompletableFuture<?>[0])).get(30, TimeUnit.SECONDS);

        Set<Long> succeeded = new TreeSet<>();
        Set<Long> failed = new TreeSet<>();
        results.forEach((amount, result) -> (result.join().isExceptional() ? failed : succeeded).add(amount));
        assertThat(refused).as("some commands were refused by the shut down bus").isTrue();
        assertThat(succeeded).hasSizeGreaterThanOrEqualTo(300);

        Set<Long> stored = new TreeSet<>();
        for (int i = 0; i < accounts; i++) {
            stored.addAll(PostgresRing.storedDeposits(server, "stop-" + i));
        }
        assertThat(stored).isEqualTo(succeeded);
        System.out.printf("Shutdown under load: %d acknowledged and stored, %d refused or failed%n",
                          succeeded.size(), failed.size());
    }
}
