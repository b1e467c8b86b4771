package io.github.ringbus.examples.bank;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.examples.bank.account.AccountCommands.DepositMoney;
import io.github.ringbus.examples.bank.account.AccountCommands.OpenAccount;
import io.github.ringbus.examples.bank.account.AccountCommands.OpenSubAccount;
import io.github.ringbus.examples.bank.account.AccountCommands.WithdrawMoney;
import io.github.ringbus.examples.bank.account.AccountEvents.AccountFlaggedUnfunded;
import io.github.ringbus.examples.bank.account.AccountEvents.AccountOpened;
import io.github.ringbus.examples.bank.account.AccountEvents.MoneyDeposited;
import io.github.ringbus.examples.bank.account.AccountEvents.MoneyWithdrawn;
import io.github.ringbus.examples.bank.account.AccountEvents.SubAccountOpened;
import io.github.ringbus.examples.bank.account.InsufficientFundsException;
import io.github.ringbus.examples.bank.balance.BalanceProjection;
import io.github.ringbus.examples.bank.balance.BalanceProjection.AccountBalance;
import io.micrometer.core.instrument.MeterRegistry;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The application as it runs, on an embedded PostgreSQL server: commands from several threads at once, then the
 * events in PostgreSQL, the balances the aggregates and the read model arrive at, and the business rule.
 */
@SpringBootTest(properties = "bank.funding-window=2s")
class BankApplicationTest {

    private static final int ACCOUNTS = 20;
    private static final int THREADS = 4;
    private static final int ROUNDS = 6;

    @Autowired
    private CommandGateway commands;
    @Autowired
    private CommandBus commandBus;
    @Autowired
    private EventStore eventStore;
    @Autowired
    private JdbcTemplate jdbc;
    @Autowired
    private BalanceProjection balances;
    @Autowired
    private MeterRegistry meters;

    @Test
    void commandsFromManyThreadsAreStoredInPostgresAndBalancesAddUp() throws Exception {
        assertThat(commandBus).isInstanceOf(RingCommandBus.class);
        long eventsBefore = storedEvents();
        String run = Long.toString(System.nanoTime(), 36);
        List<String> accounts = IntStream.range(0, ACCOUNTS).mapToObj(i -> "acc-" + run + "-" + i)
                                         .collect(Collectors.toList());
        CompletableFuture.allOf(accounts.stream().map(id -> commands.send(new OpenAccount(id, "owner of " + id)))
                                        .toArray(CompletableFuture[]::new))
                         .get();

        // Every thread, in every round, deposits 10 in each account and then takes 3 out of it. A thread's
        // withdrawal follows its own deposit, so every withdrawal is covered whatever the other threads do.
        ExecutorService threads = Executors.newFixedThreadPool(THREADS);
        try {
            List<Future<?>> work = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                work.add(threads.submit(() -> {
                    for (int round = 0; round < ROUNDS; round++) {
                        CompletableFuture.allOf(accounts.stream().map(
                                id -> commands.send(new DepositMoney(id, 10))
                                              .thenCompose(balance -> commands.send(new WithdrawMoney(id, 3))))
                                                        .toArray(CompletableFuture[]::new))
                                         .join();
                    }
                }));
            }
            for (Future<?> future : work) {
                future.get();
            }
        } finally {
            threads.shutdown();
        }

        long expectedBalance = (long) THREADS * ROUNDS * (10 - 3);
        for (String id : accounts) {
            List<Object> events = eventStore.readEvents(id).asStream().map(EventMessage::getPayload)
                                            .collect(Collectors.toList());
            assertThat(events).hasSize(1 + 2 * THREADS * ROUNDS);
            assertThat(events.get(0)).isEqualTo(new AccountOpened(id, "owner of " + id));
            long balance = 0;
            for (Object event : events) {
                if (event instanceof MoneyDeposited deposited) {
                    balance += deposited.amount();
                } else if (event instanceof MoneyWithdrawn withdrawn) {
                    balance -= withdrawn.amount();
                }
            }
            assertThat(balance).as("balance of %s from its stored events", id).isEqualTo(expectedBalance);
        }
        // The events are rows of PostgreSQL's domainevententry table.
        assertThat(storedEvents() - eventsBefore).isEqualTo(ACCOUNTS * (1 + 2L * THREADS * ROUNDS));

        // The business rule: an overdraft is refused and changes nothing.
        String first = accounts.get(0);
        assertThatThrownBy(() -> commands.sendAndWait(new WithdrawMoney(first, expectedBalance + 1)))
                .isInstanceOf(InsufficientFundsException.class)
                .hasMessageContaining("cannot pay out " + (expectedBalance + 1));
        assertThat((Long) commands.sendAndWait(new WithdrawMoney(first, expectedBalance))).isZero();

        // The read model, fed by a tracking event processor, catches up.
        for (String id : accounts) {
            long expected = id.equals(first) ? 0 : expectedBalance;
            assertThat(eventually(() -> balances.find(id).filter(b -> b.balance() == expected)))
                    .as("read model of %s", id).isEqualTo(new AccountBalance(id, "owner of " + id, expected));
        }

        // And the bus reports itself to Micrometer.
        assertThat(meters.get("ringbus.commands").tag("bus", "ringCommandBus").counter().count())
                .isGreaterThanOrEqualTo(ACCOUNTS * (1 + 2.0 * THREADS * ROUNDS));
        assertThat(meters.get("ringbus.commands.failed").tag("exception", "InsufficientFundsException")
                         .counter().count()).isGreaterThanOrEqualTo(1);
        assertThat(meters.get("ringbus.store.batch.events").summary().count()).isPositive();
    }

    @Test
    void anAccountWithoutADepositWithinTheFundingWindowIsFlaggedByItsDeadline() throws Exception {
        String run = Long.toString(System.nanoTime(), 36);
        String unfunded = "unfunded-" + run;
        String funded = "funded-" + run;
        commands.sendAndWait(new OpenAccount(unfunded, "owner"));
        commands.sendAndWait(new OpenAccount(funded, "owner"));
        commands.sendAndWait(new DepositMoney(funded, 5));

        // The deadline (2 s here) comes back to the account through ringbus and its event is stored in PostgreSQL.
        List<Object> events = eventually(() -> Optional.of(payloads(unfunded)).filter(e -> e.size() == 2));
        assertThat(events).containsExactly(new AccountOpened(unfunded, "owner"), new AccountFlaggedUnfunded(unfunded));

        // Later commands see the account as the deadline left it, and come after its event.
        assertThat((Long) commands.sendAndWait(new DepositMoney(unfunded, 3))).isEqualTo(3);
        assertThat(payloads(unfunded)).hasSize(3).last().isEqualTo(new MoneyDeposited(unfunded, 3));

        // The funded account's deadline fired too, and changed nothing.
        Thread.sleep(500);
        assertThat(payloads(funded)).containsExactly(new AccountOpened(funded, "owner"), new MoneyDeposited(funded, 5));
    }

    @Test
    void anAccountOpensASubAccountThatIsAnAccountOfItsOwn() throws Exception {
        String run = Long.toString(System.nanoTime(), 36);
        String parent = "parent-" + run;
        String sub = "sub-" + run;
        commands.sendAndWait(new OpenAccount(parent, "owner"));

        // The parent's handler creates the sub-account (AggregateLifecycle.createNew); its events are in PostgreSQL.
        commands.sendAndWait(new OpenSubAccount(parent, sub));
        assertThat(payloads(sub)).containsExactly(new AccountOpened(sub, "owner"), new SubAccountOpened(parent, sub));

        // The sub-account takes commands of its own, and the read model knows it.
        assertThat((Long) commands.sendAndWait(new DepositMoney(sub, 7))).isEqualTo(7);
        assertThat(eventually(() -> balances.find(sub).filter(b -> b.balance() == 7)))
                .isEqualTo(new AccountBalance(sub, "owner", 7));

        // A refused creation stores nothing.
        assertThatThrownBy(() -> commands.sendAndWait(new OpenSubAccount(parent, parent)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(payloads(parent)).containsExactly(new AccountOpened(parent, "owner"));
    }

    private List<Object> payloads(String accountId) {
        return eventStore.readEvents(accountId).asStream().map(EventMessage::getPayload).collect(Collectors.toList());
    }

    private long storedEvents() {
        Long count = jdbc.queryForObject("SELECT count(*) FROM domainevententry", Long.class);
        return count == null ? 0 : count;
    }

    private static <T> T eventually(java.util.function.Supplier<Optional<T>> probe) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (true) {
            Optional<T> value = probe.get();
            if (value.isPresent()) {
                return value.get();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for the read model");
            }
            Thread.sleep(20);
        }
    }
}
