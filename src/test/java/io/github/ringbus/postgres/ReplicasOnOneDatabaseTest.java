package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two replicas of one application on one PostgreSQL database, without command routing (the usual first scale-out,
 * behind a load balancer): each has its own bus, its own aggregate cache and its own connection pool, and callers'
 * commands reach either replica at random. ringbus against {@code SimpleCommandBus} under the same load: 20 hot
 * accounts, 2,000 deposits from 16 callers that wait for each answer, as HTTP requests would.
 * <p>
 * Each replica's cache holds copies the other changes; the store's unique key on aggregate and sequence number
 * refuses an append built on a stale copy, and ringbus reads the aggregate again and handles the command again on it.
 * Asserted: ringbus fails no more commands than {@code SimpleCommandBus} (which reads the aggregate at every command
 * and fails when two replicas append the same sequence number), and the data is exact: every acknowledged deposit is
 * stored once, no failed one is stored, and each acknowledged deposit returned the balance of its account as stored
 * up to and including it (no command was stored as handled on a stale copy). The figures are printed (docs/distributed.md).
 */
class ReplicasOnOneDatabaseTest extends OnPostgres {

    private static final int ACCOUNTS = 20;
    private static final int COMMANDS = 2000;
    private static final int CALLERS = 16;


    @Test
    void twoRingbusReplicasOnOneDatabaseFailNoMoreCommandsThanSimpleCommandBusAndStoreExactlyWhatTheyAcknowledged()
            throws Exception {
        Load simple;
        try (SimpleBusOnPostgres first = new SimpleBusOnPostgres(server);
             SimpleBusOnPostgres second = new SimpleBusOnPostgres(server)) {
            simple = run("simple-", List.of(first::send, second::send));
        }
        Load ringbus;
        try (PostgresRing first = new PostgresRing(server); PostgresRing second = new PostgresRing(server)) {
            ringbus = run("ring-", List.of(first::send, second::send));
        }
        System.out.printf("Two replicas, %d accounts, %d commands, %d callers: SimpleCommandBus %d failed (%s), "
                                  + "ringbus %d failed (%s)%n", ACCOUNTS, COMMANDS, CALLERS,
                          simple.failed.get(), simple.failures, ringbus.failed.get(), ringbus.failures);

        assertThat(ringbus.failed.get()).as("ringbus's failures %s against SimpleCommandBus's %s",
                                            ringbus.failures, simple.failures)
                                        .isLessThanOrEqualTo(simple.failed.get());
        simple.assertExact();
        ringbus.assertExact();
    }

    /** The load, each command sent to one of the replicas at random; returns what the callers were told. */
    private static Load run(String prefix,
                            List<Function<Object, CompletableFuture<CommandResultMessage<Object>>>> replicas)
            throws Exception {
        Load load = new Load(prefix);
        for (int i = 0; i < ACCOUNTS; i++) {
            CommandResultMessage<Object> opened = replicas.get(i % 2).apply(new Open(prefix + i)).get(30, TimeUnit.SECONDS);
            assertThat(opened.isExceptional()).as("%s", opened.optionalExceptionResult()).isFalse();
        }
        AtomicInteger next = new AtomicInteger();
        ExecutorService callers = Executors.newFixedThreadPool(CALLERS);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < CALLERS; c++) {
                Random random = new Random(42 + c);
                done.add(callers.submit(() -> {
                    for (int n = next.incrementAndGet(); n <= COMMANDS; n = next.incrementAndGet()) {
                        String account = prefix + random.nextInt(ACCOUNTS);
                        CommandResultMessage<Object> result = replicas.get(random.nextInt(2))
                                                                      .apply(new Deposit(account, n))
                                                                      .get(60, TimeUnit.SECONDS);
                        if (result.isExceptional()) {
                            load.failed.incrementAndGet();
                            load.failures.merge(result.exceptionResult().getClass().getSimpleName(), 1,
                                                Integer::sum);
                            load.failedDeposits.put((long) n, account);
                        } else {
                            load.acknowledged.put((long) n, new Acknowledged(account, (Long) result.getPayload()));
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> caller : done) {
                caller.get(5, TimeUnit.MINUTES);
            }
        } finally {
            callers.shutdownNow();
        }
        return load;
    }

    private record Acknowledged(String account, long balance) {
    }

    /** What the callers of one run were told. */
    private static final class Load {

        final String prefix;
        final AtomicInteger failed = new AtomicInteger();
        final Map<String, Integer> failures = new ConcurrentHashMap<>();
        final Map<Long, Acknowledged> acknowledged = new ConcurrentHashMap<>();
        final Map<Long, String> failedDeposits = new ConcurrentHashMap<>();

        Load(String prefix) {
            this.prefix = prefix;
        }

        void assertExact() {
            assertThat(acknowledged.size() + failed.get()).isEqualTo(COMMANDS);
            Map<Long, String> storedIn = new HashMap<>();
            for (int i = 0; i < ACCOUNTS; i++) {
                String account = prefix + i;
                long balance = 0;
                List<DomainEventMessage<?>> events = PostgresRing.readFresh(server, account);
                for (int sequence = 0; sequence < events.size(); sequence++) {
                    assertThat(events.get(sequence).getSequenceNumber()).isEqualTo(sequence);
                    if (events.get(sequence).getPayload() instanceof AccountEvents.Deposited deposited) {
                        balance += deposited.amount();
                        assertThat(storedIn.put(deposited.amount(), account)).as("deposit %d stored twice",
                                                                                 deposited.amount()).isNull();
                        Acknowledged ack = acknowledged.get(deposited.amount());
                        assertThat(ack).as("deposit %d of %s stored but failed", deposited.amount(), account)
                                       .isNotNull();
                        assertThat(ack.account()).isEqualTo(account);
                        assertThat(ack.balance()).as("balance returned by deposit %d", deposited.amount())
                                                 .isEqualTo(balance);
                    }
                }
            }
            assertThat(storedIn.keySet()).containsExactlyInAnyOrderElementsOf(acknowledged.keySet());
        }
    }
}
