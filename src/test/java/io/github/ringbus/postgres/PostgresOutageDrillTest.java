package io.github.ringbus.postgres;

import io.github.ringbus.CommitOutcomeUnknownException;
import io.github.ringbus.StoreFailure;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandResultMessage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The outage drill: 64 dispatching threads on durable PostgreSQL, the server stopped for 5 s in the middle of the load
 * and started again. Every caller is answered within the pool's and the ring's own bounds; every acknowledged deposit
 * is stored exactly once; a failed one is stored only when its failure said the outcome was unknown; the bus stores
 * again once the server is back, without a restart; {@link io.github.ringbus.RingCommandBus#storeFailure()} said the
 * store was failing during the outage and says nothing once it stores again. The figures (time to recover, commands
 * acknowledged and failed) are printed, and recorded in docs/guarantees.md.
 */
class PostgresOutageDrillTest {

    private static final int DISPATCHERS = 64;
    /** How long the server is away: 5 s in {@code verify}; {@code -Dringbus.drill.outageSeconds=30} for the long drill. */
    private static final int OUTAGE_SECONDS = Integer.getInteger("ringbus.drill.outageSeconds", 5);
    /** The most a caller may wait: the pool's connection timeout (1 s) for each try of the store, with margin. */
    private static final long ANSWERED_WITHIN_SECONDS = 30 + OUTAGE_SECONDS;

    private static PostgresServer server;

    @BeforeAll
    static void startServer() {
        server = PostgresServer.startForTests();
    }

    @AfterAll
    static void stopServer() {
        server.close();
    }

    /** One deposit sent: its amount (unique per account), when, and how it ended. */
    private record Sent(String account, long amount, long sentNanos, long answeredNanos,
                        CommandResultMessage<Object> result) {
    }

    @Test
    void anOutageUnderLoadLosesNothingAcknowledgedAnswersEveryCallerAndTheBusStoresAgainWithoutARestart()
            throws Exception {
        try (PostgresRing ring = new PostgresRing(server)) {
            for (int i = 0; i < DISPATCHERS; i++) {
                ring.sendAndWait(new Open("drill-" + i));
            }
            ConcurrentLinkedQueue<Sent> sent = new ConcurrentLinkedQueue<>();
            AtomicBoolean running = new AtomicBoolean(true);
            AtomicLong unanswered = new AtomicLong();
            CountDownLatch done = new CountDownLatch(DISPATCHERS);
            for (int i = 0; i < DISPATCHERS; i++) {
                String account = "drill-" + i;
                Thread dispatcher = new Thread(() -> {
                    try {
                        for (long amount = 1; running.get(); amount++) {
                            long at = System.nanoTime();
                            CompletableFuture<CommandResultMessage<Object>> result = ring.send(
                                    new Deposit(account, amount));
                            try {
                                CommandResultMessage<Object> answer = result.get(ANSWERED_WITHIN_SECONDS,
                                                                                 TimeUnit.SECONDS);
                                sent.add(new Sent(account, amount, at, System.nanoTime(), answer));
                            } catch (TimeoutException unansweredInTime) {
                                unanswered.incrementAndGet();
                                return;
                            }
                        }
                    } catch (Exception e) {
                        unanswered.incrementAndGet();
                    } finally {
                        done.countDown();
                    }
                }, "drill-dispatcher-" + i);
                dispatcher.setDaemon(true);
                dispatcher.start();
            }

            Thread.sleep(2_000);
            long stoppedAt = System.nanoTime();
            server.stop();
            List<StoreFailure> seenDuringOutage = new ArrayList<>();
            Runtime runtime = Runtime.getRuntime();
            long mostHeapUsed = 0;
            for (int i = 0; i < 2 * OUTAGE_SECONDS; i++) {
                Thread.sleep(500);
                StoreFailure failure = ring.bus.storeFailure();
                if (failure != null) {
                    seenDuringOutage.add(failure);
                }
                mostHeapUsed = Math.max(mostHeapUsed, runtime.totalMemory() - runtime.freeMemory());
            }
            server.restart();
            long restartedAt = System.nanoTime();
            Thread.sleep(4_000);
            running.set(false);
            assertThat(done.await(ANSWERED_WITHIN_SECONDS + 10, TimeUnit.SECONDS)).as("every dispatcher returned")
                                                                                   .isTrue();

            assertThat(unanswered.get()).as("callers not answered within %d s", ANSWERED_WITHIN_SECONDS).isZero();
            assertThat(seenDuringOutage).as("the store said it was failing during the outage").isNotEmpty();
            // Commands pile up in the ring at most (its slots are preallocated), not in memory besides it.
            assertThat(mostHeapUsed).as("heap used during the outage").isLessThan(runtime.maxMemory() * 3 / 4);
            assertThat(ring.bus.storeFailure()).as("nothing failing once it stores again").isNull();

            long acknowledged = 0;
            long failed = 0;
            long outcomeUnknown = 0;
            long firstStoredAfterRestart = Long.MAX_VALUE;
            for (int i = 0; i < DISPATCHERS; i++) {
                String account = "drill-" + i;
                List<Long> stored = PostgresRing.storedDeposits(server, account);
                assertThat(new HashSet<>(stored)).as("deposits of %s stored at most once", account)
                                                 .hasSize(stored.size());
                Set<Long> mayBeStored = new HashSet<>();
                for (Sent deposit : sent) {
                    if (!deposit.account().equals(account)) {
                        continue;
                    }
                    if (!deposit.result().isExceptional()) {
                        acknowledged++;
                        assertThat(stored).as("acknowledged deposit %d of %s", deposit.amount(), account)
                                          .contains(deposit.amount());
                        mayBeStored.add(deposit.amount());
                        if (deposit.answeredNanos() > restartedAt) {
                            firstStoredAfterRestart = Math.min(firstStoredAfterRestart, deposit.answeredNanos());
                        }
                    } else {
                        failed++;
                        if (hasCause(deposit.result().exceptionResult(), CommitOutcomeUnknownException.class)) {
                            outcomeUnknown++;
                            mayBeStored.add(deposit.amount());
                        }
                    }
                }
                assertThat(mayBeStored).as("every stored deposit of %s was acknowledged or of unknown outcome",
                                           account).containsAll(stored);
            }
            assertThat(acknowledged).isPositive();
            long longestWait = sent.stream().mapToLong(deposit -> deposit.answeredNanos() - deposit.sentNanos()).max()
                                   .orElse(0);
            assertThat(firstStoredAfterRestart).as("a deposit acknowledged after the server came back")
                                               .isLessThan(Long.MAX_VALUE);
            CommandResultMessage<Object> after = ring.sendAndWait(new Deposit("drill-0", Long.MAX_VALUE));
            assertThat(after.isExceptional()).as("a deposit once the load has ended: %s",
                                                 after.optionalExceptionResult()).isFalse();
            System.out.printf("Outage drill: %d dispatchers, server stopped %.1f s; %,d deposits acknowledged, %,d "
                              + "failed (%,d of unknown outcome); the first deposit acknowledged after the restart %.2f s "
                              + "after it; the longest wait for an answer %.2f s; at most %,d MB of heap used during the "
                              + "outage; none lost, none stored twice%n",
                              DISPATCHERS, (restartedAt - stoppedAt) / 1e9, acknowledged, failed, outcomeUnknown,
                              (firstStoredAfterRestart - restartedAt) / 1e9, longestWait / 1e9, mostHeapUsed >> 20);
        }
    }

    private static boolean hasCause(Throwable failure, Class<? extends Throwable> type) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (type.isInstance(cause)) {
                return true;
            }
        }
        return false;
    }
}
