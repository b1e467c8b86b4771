package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A killed process loses nothing it acknowledged. Each round runs ringbus in a child JVM ({@link CrashRecoveryChild})
 * on a PostgreSQL server with durable settings ({@code fsync=on}, {@code synchronous_commit=on}), drives it from
 * several dispatching threads, and kills it with SIGKILL at a random moment; the last round first kills the database
 * server itself mid-stream (every server process, SIGKILL) and restarts it (crash recovery from its WAL). After each
 * kill the database is read afresh: every command whose callback reported success is stored exactly once, no command
 * is stored twice, no command whose handler failed is stored, and every aggregate's sequence numbers are gapless.
 * At the end a fresh bus loads every aggregate and accepts a new command for each, with the balance the store says.
 * <p>
 * Seeded: {@code -Dcrash.seed=N} repeats a run (the seed is printed and in every failure message);
 * {@code -Dcrash.rounds=N} (default 3) for a longer run by hand.
 */
class CrashRecoveryTest {

    private static final int ACCOUNTS = 40;
    private static final int DISPATCHERS = 4;

    private static PostgresServer server;

    @BeforeAll
    static void startDurablePostgres() {
        server = PostgresServer.start(Map.of("synchronous_commit", "on", "fsync", "on"));
    }

    @AfterAll
    static void stopPostgres() {
        if (server != null) {
            server.close();
        }
    }

    @Test
    void killedProcessesAndAKilledServerLoseNothingAcknowledgedAndStoreNothingTwice() throws Exception {
        long seed = Long.getLong("crash.seed", System.nanoTime());
        int rounds = Integer.getInteger("crash.rounds", 3);
        Random random = new Random(seed);
        String run = "seed " + seed + " (-Dcrash.seed=" + seed + ")";
        System.out.println("CrashRecoveryTest: " + run);
        Map<Long, String> acknowledged = new HashMap<>();
        Set<Long> failedInHandler = ConcurrentHashMap.newKeySet();
        long storeFailures = 0;

        for (int round = 0; round < rounds; round++) {
            boolean killServer = round == rounds - 1;
            Child child = Child.start(server.jdbcUrl(), round, seed + round);
            child.awaitReady();
            // The kill comes at a random moment after the first acknowledgement: on a busy machine the child may
            // take longer than the whole random interval to acknowledge anything.
            long firstDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (child.acknowledged.isEmpty() && System.nanoTime() < firstDeadline) {
                Thread.sleep(5);
            }
            Thread.sleep(300 + random.nextInt(1200));
            long acknowledgedAfterRestart = 0;
            if (killServer) {
                server.kill();
                Thread.sleep(200 + random.nextInt(300));
                server.restart();
                long restarted = child.acknowledged.size();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (child.acknowledged.size() - restarted < 100 && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                Thread.sleep(random.nextInt(500));
                acknowledgedAfterRestart = child.acknowledged.size() - restarted;
            }
            long beforeKill = child.acknowledged.size();
            child.process.destroyForcibly(); // SIGKILL
            assertThat(child.process.waitFor(30, TimeUnit.SECONDS)).as(run).isTrue();
            child.reader.join(TimeUnit.SECONDS.toMillis(30));
            System.out.printf("CrashRecoveryTest round %d (%d store thread(s))%s: %,d acknowledged (%,d when killed), %,d failed in the "
                              + "handler, %,d failed otherwise%n", round, Child.storeThreadsOf(round), killServer ? " (server killed too)" : "",
                              child.acknowledged.size(), beforeKill, child.failedInHandler.size(),
                              child.otherFailures.get());
            assertThat(child.acknowledged).as("commands acknowledged in round %d, %s", round, run).isNotEmpty();
            if (killServer) {
                assertThat(acknowledgedAfterRestart)
                        .as("commands acknowledged within 30 s of the server's restart (ringbus recovers), %s", run)
                        .isGreaterThanOrEqualTo(100);
            }
            acknowledged.putAll(child.acknowledged);
            failedInHandler.addAll(child.failedInHandler);
            storeFailures += child.otherFailures.get();

            long storedDespiteFailure = checkTheStore(round, acknowledged, failedInHandler, child.failedOtherwise, run);
            if (!child.failedOtherwise.isEmpty()) {
                System.out.printf("CrashRecoveryTest round %d: of the %,d commands that failed in the store, %,d are "
                                  + "stored all the same (a commit whose answer was lost)%n",
                                  round, child.failedOtherwise.size(), storedDespiteFailure);
            }
        }
        System.out.printf("CrashRecoveryTest: %,d commands acknowledged over %d rounds, all stored once; %,d failed "
                          + "in the store while the server was down%n", acknowledged.size(), rounds, storeFailures);

        try (PostgresRing fresh = new PostgresRing(server)) {
            for (int round = 0; round < rounds; round++) {
                for (int i = 0; i < ACCOUNTS; i++) {
                    String account = CrashRecoveryChild.account(round, i);
                    long stored = PostgresRing.storedDeposits(server, account).stream().mapToLong(Long::longValue).sum();
                    CommandResultMessage<Object> result = fresh.sendAndWait(new Deposit(account, 1));
                    assertThat(result.isExceptional()).as("%s after the kills: %s, %s", account,
                                                          result.optionalExceptionResult(), run).isFalse();
                    assertThat(result.getPayload()).as("%s's balance, %s", account, run).isEqualTo(stored + 1);
                }
            }
        }
    }

    /** Reads every account afresh and checks the invariants against what the children reported. */
    private static long checkTheStore(int round, Map<Long, String> acknowledged, Set<Long> failedInHandler,
                                      Set<Long> failedOtherwise, String run) {
        Map<Long, Integer> storedTimes = new HashMap<>();
        Map<Long, String> storedIn = new HashMap<>();
        for (int r = 0; r <= round; r++) {
            for (int i = 0; i < ACCOUNTS; i++) {
                String account = CrashRecoveryChild.account(r, i);
                List<DomainEventMessage<?>> events = PostgresRing.readFresh(server, account);
                List<Long> sequences = new ArrayList<>();
                for (DomainEventMessage<?> event : events) {
                    sequences.add(event.getSequenceNumber());
                    if (event.getPayload() instanceof Deposited deposited) {
                        storedTimes.merge(deposited.amount(), 1, Integer::sum);
                        storedIn.put(deposited.amount(), account);
                    }
                }
                for (int s = 0; s < sequences.size(); s++) {
                    assertThat(sequences.get(s)).as("sequence numbers of %s after round %d, %s", account, round, run)
                                                .isEqualTo((long) s);
                }
            }
        }
        storedTimes.forEach((amount, times) -> assertThat(times)
                .as("times the command with amount %d is stored, after round %d, %s", amount, round, run)
                .isEqualTo(1));
        acknowledged.forEach((amount, account) -> assertThat(storedIn.get(amount))
                .as("acknowledged command %d of %s after round %d, %s", amount, account, round, run)
                .isEqualTo(account));
        for (long amount : failedInHandler) {
            assertThat(storedTimes).as("command %d failed in its handler, after round %d, %s", amount, round, run)
                                   .doesNotContainKey(amount);
        }
        return failedOtherwise.stream().filter(storedTimes::containsKey).count();
    }

    /** A {@link CrashRecoveryChild} process and what it reported. */
    private static final class Child {

        final Process process;
        final Thread reader;
        final CountDownLatch ready = new CountDownLatch(1);
        final Map<Long, String> acknowledged = new ConcurrentHashMap<>();
        final Set<Long> failedInHandler = ConcurrentHashMap.newKeySet();
        final AtomicLong otherFailures = new AtomicLong();
        final Set<Long> failedOtherwise = ConcurrentHashMap.newKeySet();
        final List<String> other = new ArrayList<>();

        private Child(Process process) {
            this.process = process;
            this.reader = new Thread(this::read, "crash-child-reader");
            reader.setDaemon(true);
            reader.start();
        }

        /** Rounds run one, two and three store threads in turn: each round's child commits through that many. */
        static int storeThreadsOf(int round) {
            return 1 + round % 3;
        }

        static Child start(String jdbcUrl, int round, long seed) throws Exception {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            ProcessBuilder builder = new ProcessBuilder(
                    java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                    "-Daxon.axonserver.enabled=false", "-DAXONIQ_UPDATE_CHECKER_DISABLED=true",
                    CrashRecoveryChild.class.getName(),
                    jdbcUrl, Integer.toString(round), Integer.toString(ACCOUNTS), Integer.toString(DISPATCHERS),
                    Long.toString(seed), Integer.toString(storeThreadsOf(round)));
            builder.environment().put("AXONIQ_UPDATE_CHECKER_DISABLED", "true");
            builder.redirectError(ProcessBuilder.Redirect.appendTo(new java.io.File("target/crash-child-" + round + ".err")));
            return new Child(builder.start());
        }

        private void read() {
            try (BufferedReader lines = new BufferedReader(
                    new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                String line;
                while ((line = lines.readLine()) != null) {
                    String[] parts = line.split(" ");
                    boolean whole = parts.length == 4 && parts[3].equals(".");
                    if (line.equals("READY")) {
                        ready.countDown();
                    } else if (whole && parts[0].equals("OK")) {
                        acknowledged.put(Long.parseLong(parts[1]), parts[2]);
                    } else if (whole && parts[0].equals("FAIL") && parts[2].equals("handler")) {
                        failedInHandler.add(Long.parseLong(parts[1]));
                    } else if (whole && parts[0].equals("FAIL")) {
                        otherFailures.incrementAndGet();
                        failedOtherwise.add(Long.parseLong(parts[1]));
                    } else if (other.size() < 20) {
                        other.add(line); // a line cut short by the kill, or the child's own output
                    }
                }
            } catch (Exception ignored) {
                // the child was killed
            }
        }

        void awaitReady() throws InterruptedException {
            if (!ready.await(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("The child did not open its accounts within a minute; it said " + other);
            }
        }
    }
}
