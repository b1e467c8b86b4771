package io.github.ringbus.behaviour;

import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.Registration;
import org.axonframework.messaging.MessageHandler;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Aggregates missing from the cache (more aggregates in use than {@code cacheSize}, or the first commands after a
 * start) are read from the store by several threads at once: when the preload stage misses one, it starts reading the
 * other missing aggregates of the commands behind it in the ring on the bus's read-ahead threads, and each of those
 * commands then runs on its aggregate exactly as stored, as if the preload stage had read it itself.
 * <p>
 * Each test fills the ring behind a command whose handler holds the one stage thread that preloads ({@code COMPACT}),
 * so that the preload stage then meets all the commands in one batch; the store's reads take 20 ms each, as a
 * database's round trips would, so that reads that can overlap do.
 */
class ReadAheadTest {

    private static final int ACCOUNTS = 12;

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    @Test
    void theAggregatesOfTheCommandsBehindAMissAreReadOnReadAheadThreadsAtTheSameTime() throws InterruptedException {
        ring = coldRing(4);

        List<Outcome> deposits = depositOnEveryAccountAsOneBatch();

        for (int i = 0; i < ACCOUNTS; i++) {
            assertThat(deposits.get(i).awaitSuccess()).as("balance of account %d", i).isEqualTo(100L + i);
        }
        List<String> readers = ring.engine.readingThreads();
        assertThat(readers).as("one read per account: the preload stage's for the first, read-ahead threads' after")
                           .hasSize(ACCOUNTS)
                           .filteredOn(name -> name.startsWith("ringbus-read-")).hasSize(ACCOUNTS - 1);
        assertThat(ring.engine.mostReadsAtOnce()).isGreaterThan(1);
    }

    @Test
    void withoutReadAheadThreadsThePreloadStageReadsEachMissingAggregateItselfOneAfterAnother()
            throws InterruptedException {
        ring = coldRing(0);

        List<Outcome> deposits = depositOnEveryAccountAsOneBatch();

        for (int i = 0; i < ACCOUNTS; i++) {
            assertThat(deposits.get(i).awaitSuccess()).as("balance of account %d", i).isEqualTo(100L + i);
        }
        assertThat(ring.engine.readingThreads()).hasSize(ACCOUNTS).containsOnly("ringbus-preload-handle");
        assertThat(ring.engine.mostReadsAtOnce()).isEqualTo(1);
    }

    @Test
    void aReadAheadThatFailsFailsOnlyTheCommandThatNeededItsAggregate() throws InterruptedException {
        ring = coldRing(4);
        ring.engine.failReadsOf("cold-5");

        List<Outcome> deposits = depositOnEveryAccountAsOneBatch();

        assertThat(deposits.get(5).awaitFailure()).hasMessageContaining(FaultyStorageEngine.INJECTED)
                                                  .hasMessageContaining("cold-5");
        for (int i = 0; i < ACCOUNTS; i++) {
            if (i != 5) {
                assertThat(deposits.get(i).awaitSuccess()).as("balance of account %d", i).isEqualTo(100L + i);
            }
        }
        ring.engine.readableAgain("cold-5");
        assertThat(ring.send(new Deposit("cold-5", 1)).awaitSuccess()).isEqualTo(101L);
        assertThat(ring.storedSequenceNumbers("cold-5")).containsExactly(0L, 1L, 2L);
    }

    @Test
    void commandsOfOneAggregateBehindAMissUseOneReadAndRunInDispatchOrderOnIt() throws InterruptedException {
        ring = coldRing(4);

        List<Outcome> deposits = sendAsOneBatch(1, 30, amount -> new Deposit("cold-" + (amount % 3), amount));

        long[] balances = {100, 100, 100};
        for (int i = 0; i < deposits.size(); i++) {
            long amount = i + 1;
            balances[(int) (amount % 3)] += amount;
            assertThat(deposits.get(i).awaitSuccess()).as("deposit %d", amount)
                                                      .isEqualTo(balances[(int) (amount % 3)]);
        }
        assertThat(ring.engine.readingThreads()).as("one read for each of the three accounts").hasSize(3);
        for (int account = 0; account < 3; account++) {
            assertThat(ring.storedSequenceNumbers("cold-" + account))
                    .containsExactlyElementsOf(LongStream.rangeClosed(0, 11).boxed().collect(Collectors.toList()));
        }
    }

    /**
     * A started {@code COMPACT} ring with a cache of one aggregate, whose {@link #ACCOUNTS} accounts are opened with
     * 100 each and then all but the last dropped from the cache; the store's reads are slow from then on and counted
     * afresh.
     */
    private RingbusFixture coldRing(int readAheadThreads) {
        RingbusFixture cold = RingbusFixture.started(
                b -> b.topology(Topology.COMPACT).handlerThreads(1).cacheSize(1).readAheadThreads(readAheadThreads));
        for (int i = 0; i < ACCOUNTS; i++) {
            cold.sendAndWait(new Open("cold-" + i));
            cold.sendAndWait(new Deposit("cold-" + i, 100));
        }
        // An open drops every aggregate whose commands are complete; an aggregate counts as complete only once its
        // callback has returned, so the last account can outlive the first open after it: a second one drops it.
        cold.sendAndWait(new Open("warm-1"));
        cold.sendAndWait(new Open("warm-2"));
        cold.engine.slowReads(20);
        cold.engine.countReadsFromNow();
        return cold;
    }

    /** Sends a deposit of its index to each account as one batch of the preload stage. */
    private List<Outcome> depositOnEveryAccountAsOneBatch() throws InterruptedException {
        return sendAsOneBatch(0, ACCOUNTS - 1, i -> new Deposit("cold-" + i, i));
    }

    /**
     * Sends the commands made of {@code from} to {@code to} while a command's handler holds the preload stage's
     * thread, then lets it go: the preload stage meets them all in one batch.
     */
    private List<Outcome> sendAsOneBatch(long from, long to, java.util.function.LongFunction<Object> command)
            throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch holding = new CountDownLatch(1);
        Registration gate = holdThePreloadStage(holding, release);
        try {
            Outcome gateOutcome = ring.send(RingbusFixture.blockCommand("gate"));
            assertThat(holding.await(10, TimeUnit.SECONDS)).isTrue();
            List<Outcome> sent = new ArrayList<>();
            for (long n = from; n <= to; n++) {
                sent.add(ring.send(command.apply(n)));
            }
            release.countDown();
            gateOutcome.awaitSuccess();
            return sent;
        } finally {
            gate.cancel();
        }
    }

    /** Subscribes a handler that holds the ring's preloading thread until released. */
    private Registration holdThePreloadStage(CountDownLatch holding, CountDownLatch release) {
        MessageHandler<CommandMessage<?>> handler = command -> {
            holding.countDown();
            if (!release.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never released");
            }
            return command.getPayload();
        };
        return ring.bus.subscribe(RingbusFixture.BLOCK, handler);
    }
}
