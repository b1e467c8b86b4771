package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.GetBalance;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.CommitOutcomeUnknownException;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;
import org.postgresql.ds.PGSimpleDataSource;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Faults of a real PostgreSQL during group commit: a constraint violation inside a batch, the connection killed
 * during the append and at the commit, the server stopped and started again.
 * <p>
 * Batches are formed deterministically: a "gate" command's append is held on the store stage's thread until the
 * commands of the batch under test have all been handled, so the store stage then finds them all at once.
 */
class PostgresFaultInjectionTest extends OnPostgres {

    /** Holds the append of events of the aggregate "gate-..." until released; then runs the armed fault once. */
    private static final class Faults implements PostgresServer.AppendHook {

        volatile String gateAggregate;
        volatile CountDownLatch gate;
        volatile CountDownLatch gateEntered;
        /** Runs with the connection of the append that contains the events of {@link #target}. */
        volatile FaultAction action;
        volatile String target;
        final AtomicInteger faultsRun = new AtomicInteger();

        @Override
        public void beforeAppend(Connection connection, List<? extends EventMessage<?>> events) throws SQLException {
            CountDownLatch held = gate;
            if (held != null && contains(events, gateAggregate)) {
                gateEntered.countDown();
                try {
                    if (!held.await(30, TimeUnit.SECONDS)) {
                        throw new IllegalStateException("gate never opened");
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            FaultAction fault = action;
            if (fault != null && contains(events, target)) {
                action = null;
                faultsRun.incrementAndGet();
                fault.run(connection);
            }
        }

        private static boolean contains(List<? extends EventMessage<?>> events, String aggregate) {
            return aggregate != null && events.stream().anyMatch(
                    e -> aggregate.equals(((DomainEventMessage<?>) e).getAggregateIdentifier()));
        }
    }

    @FunctionalInterface
    private interface FaultAction {
        void run(Connection connection) throws SQLException;
    }

    /**
     * Dispatches the commands as one store batch: holds the store stage on a gate command until all of them were
     * handled.
     */
    private static List<CompletableFuture<CommandResultMessage<Object>>> dispatchAsOneBatch(
            PostgresRing ring, Faults faults, String gateAccount, Object... commands) throws InterruptedException {
        faults.gateAggregate = gateAccount;
        faults.gateEntered = new CountDownLatch(1);
        faults.gate = new CountDownLatch(1);
        int handledBefore = ring.handled.get();
        CompletableFuture<CommandResultMessage<Object>> gateResult = ring.send(new Deposit(gateAccount, 1));
        // The store stage is inside the gate command's append, which holds that command alone.
        assertThat(faults.gateEntered.await(30, TimeUnit.SECONDS)).isTrue();
        List<CompletableFuture<CommandResultMessage<Object>>> results = new ArrayList<>();
        for (Object command : commands) {
            results.add(ring.send(command));
        }
        ring.awaitHandled(handledBefore + 1 + commands.length);
        // The handler thread publishes its progress right after its last handler returned.
        Thread.sleep(250);
        faults.gate.countDown();
        faults.gate = null;
        assertThat(gateResult.join().isExceptional()).isFalse();
        return results;
    }

    private static Throwable failureOf(CompletableFuture<CommandResultMessage<Object>> result) {
        CommandResultMessage<Object> message = result.join();
        assertThat(message.isExceptional()).as("expected a failure").isTrue();
        return message.exceptionResult();
    }

    private static void assertSucceeded(CompletableFuture<CommandResultMessage<Object>> result) {
        CommandResultMessage<Object> message = result.join();
        assertThat(message.isExceptional()).as("%s", message.optionalExceptionResult()).isFalse();
    }

    private static boolean hasCause(Throwable failure, Class<? extends Throwable> type) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    /** The database is back once the bus's pool hands out a connection again. */
    private static void awaitConnection(PostgresRing ring) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try (Connection connection = ring.pool.getConnection()) {
                if (connection.isValid(1)) {
                    return;
                }
            } catch (SQLException e) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("The pool did not reconnect", e);
                }
            }
            Thread.sleep(50);
        }
    }

    @Test
    void aCommandOnAnAggregateAnotherWriterAppendedToIsHandledAgainAndTheRestOfItsBatchIsStored() throws Exception {
        Faults faults = new Faults();
        try (PostgresRing ring = new PostgresRing(server, faults, b -> b.handlerThreads(1))) {
            for (String account : List.of("cv-gate", "cv-a", "cv-b", "cv-c", "cv-d")) {
                assertThat(ring.sendAndWait(new Open(account)).isExceptional()).isFalse();
            }
            // Another writer appends to cv-b behind ringbus's back: the sequence number ringbus uses next is taken.
            PGSimpleDataSource other = new PGSimpleDataSource();
            other.setUrl(server.jdbcUrl());
            PostgresServer.engine(new JdbcTransactionManager(other)).appendEvents(
                    new GenericDomainEventMessage<>("Account", "cv-b", 1, new Deposited("cv-b", 1000)));
            int startedBefore = ring.storeTransactions.started.get();
            int committedBefore = ring.storeTransactions.committed.get();

            List<CompletableFuture<CommandResultMessage<Object>>> results = dispatchAsOneBatch(
                    ring, faults, "cv-gate",
                    new Deposit("cv-a", 1), new Deposit("cv-b", 2), new Deposit("cv-b", 3),
                    new Deposit("cv-c", 4), new Deposit("cv-d", 5));

            assertSucceeded(results.get(0));
            // The unique key refused cv-b's sequence number (Axon's ConcurrencyException): read again from the store
            // (1000) and handled again, as is the command built on it.
            assertThat(results.get(1).get(30, TimeUnit.SECONDS).getPayload()).isEqualTo(1002L);
            assertThat(results.get(2).get(30, TimeUnit.SECONDS).getPayload()).isEqualTo(1005L);
            assertSucceeded(results.get(3));
            assertSucceeded(results.get(4));

            // The gate's batch, the failed batch of five, then isolation: [a, b2] fails, [a] commits, [b2] fails,
            // [b2] handled again commits, then [b3, c, d] (b3 handled again) commits.
            assertThat(ring.storeTransactions.started.get() - startedBefore).isEqualTo(7);
            assertThat(ring.storeTransactions.committed.get() - committedBefore).isEqualTo(4);

            assertThat(PostgresRing.storedDeposits(server, "cv-a")).containsExactly(1L);
            assertThat(PostgresRing.storedDeposits(server, "cv-b")).containsExactly(1000L, 2L, 3L);
            assertThat(PostgresRing.storedDeposits(server, "cv-c")).containsExactly(4L);
            assertThat(PostgresRing.storedDeposits(server, "cv-d")).containsExactly(5L);

            // The conflicting aggregate is reloaded from the store for its next command.
            CommandResultMessage<Object> next = ring.sendAndWait(new Deposit("cv-b", 10));
            assertThat(next.isExceptional()).as("%s", next.optionalExceptionResult()).isFalse();
            assertThat(next.getPayload()).isEqualTo(1015L);
            assertThat(PostgresRing.storedDeposits(server, "cv-b")).containsExactly(1000L, 2L, 3L, 10L);
        }
    }

    /**
     * A real deadlock: another transaction holds a row of an application's table and waits for a second row, which
     * the store's transaction (a subscriber's write in it, say) holds and then waits for the first: PostgreSQL
     * aborts the store's transaction as the deadlock's victim (SQLState 40P01). The store tries the same batch again
     * after a pause, and it is stored; the other transaction commits. (On SimpleCommandBus the command fails with the
     * deadlock.)
     */
    @Test
    void aBatchTheDatabaseAbortedAsADeadlocksVictimIsTriedAgainAndStored() throws Exception {
        try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
            statement.execute("CREATE TABLE dl_rows (id int PRIMARY KEY, n int NOT NULL)");
            statement.execute("INSERT INTO dl_rows VALUES (1, 0), (2, 0)");
        }
        Faults faults = new Faults();
        try (PostgresRing ring = new PostgresRing(server, faults, b -> b.handlerThreads(1));
             Connection other = server.connect()) {
            other.setAutoCommit(false);
            int otherPid;
            try (Statement statement = other.createStatement()) {
                statement.execute("SET deadlock_timeout = '60s'"); // the store's session finds the deadlock
                statement.execute("UPDATE dl_rows SET n = n + 1 WHERE id = 1");
                var result = statement.executeQuery("SELECT pg_backend_pid()");
                result.next();
                otherPid = result.getInt(1);
            }
            CountDownLatch storeHoldsRowTwo = new CountDownLatch(1);
            faults.target = "dl-a";
            faults.action = connection -> {
                try (Statement statement = connection.createStatement()) {
                    statement.execute("SET LOCAL deadlock_timeout = '20ms'");
                    statement.execute("UPDATE dl_rows SET n = n + 1 WHERE id = 2");
                    storeHoldsRowTwo.countDown();
                    awaitLockWait(connection, otherPid);
                    statement.execute("UPDATE dl_rows SET n = n + 1 WHERE id = 1");
                }
            };
            CompletableFuture<Void> otherWaits = CompletableFuture.runAsync(() -> {
                try (Statement statement = other.createStatement()) {
                    assertThat(storeHoldsRowTwo.await(30, TimeUnit.SECONDS)).isTrue();
                    statement.execute("UPDATE dl_rows SET n = n + 1 WHERE id = 2");
                    other.commit();
                } catch (SQLException | InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });

            CommandResultMessage<Object> opened = ring.send(new Open("dl-a")).get(30, TimeUnit.SECONDS);

            assertThat(opened.isExceptional()).as("%s", opened.optionalExceptionResult()).isFalse();
            otherWaits.get(30, TimeUnit.SECONDS);
            assertThat(faults.faultsRun).hasValue(1);
            assertThat(PostgresRing.readFresh(server, "dl-a").stream().map(e -> (Object) e.getPayload()))
                    .containsExactly(new Opened("dl-a"));
            try (Connection check = server.connect(); Statement statement = check.createStatement();
                 var rows = statement.executeQuery("SELECT n FROM dl_rows ORDER BY id")) {
                List<Integer> counts = new ArrayList<>();
                while (rows.next()) {
                    counts.add(rows.getInt(1));
                }
                assertThat(counts).as("the other transaction's updates only").containsExactly(1, 1);
            }
        } finally {
            try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
                statement.execute("DROP TABLE dl_rows");
            }
        }
    }

    /** Waits until the session {@code pid} waits for a lock, as seen from {@code connection}. */
    private static void awaitLockWait(Connection connection, int pid) throws SQLException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        try (var query = connection.prepareStatement("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?")) {
            query.setInt(1, pid);
            while (System.nanoTime() < deadline) {
                try (var result = query.executeQuery()) {
                    if (result.next() && "Lock".equals(result.getString(1))) {
                        return;
                    }
                }
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(5));
            }
        }
        throw new IllegalStateException("session " + pid + " never waited for a lock");
    }

    /**
     * A failure the store stage cannot explain as a conflict (here a trigger of the database that refuses some rows
     * with RAISE EXCEPTION, SQLState P0001) fails only the commands whose events the database refuses: 2 of 10 in
     * one batch; the other 8 are stored.
     */
    @Test
    void rowsATriggerRefusesFailOnlyTheirOwnCommandsOfTheBatch() throws Exception {
        Faults faults = new Faults();
        try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
            statement.execute("CREATE FUNCTION refuse_rows() RETURNS trigger AS $$ BEGIN "
                                      + "RAISE EXCEPTION 'rows of % are refused', NEW.aggregateIdentifier; END $$ "
                                      + "LANGUAGE plpgsql");
            statement.execute("CREATE TRIGGER refuse_rows BEFORE INSERT ON DomainEventEntry FOR EACH ROW "
                                      + "WHEN (NEW.aggregateIdentifier LIKE 'refuse-%') EXECUTE FUNCTION refuse_rows()");
        }
        try (PostgresRing ring = new PostgresRing(server, faults, b -> b.handlerThreads(1))) {
            ring.sendAndWait(new Open("tr-gate"));
            List<Object> commands = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                ring.sendAndWait(new Open("tr-" + i));
                commands.add(new Deposit("tr-" + i, i + 1));
                if (i == 2 || i == 5) {
                    commands.add(new Open("refuse-" + i));
                }
            }

            List<CompletableFuture<CommandResultMessage<Object>>> results =
                    dispatchAsOneBatch(ring, faults, "tr-gate", commands.toArray());

            int failed = 0;
            for (int c = 0; c < commands.size(); c++) {
                if (commands.get(c) instanceof Open open) {
                    Throwable refused = failureOf(results.get(c));
                    assertThat(hasCause(refused, SQLException.class)).as("%s", refused).isTrue();
                    assertThat(refused).hasStackTraceContaining("rows of " + open.accountId() + " are refused");
                    assertThat(PostgresRing.readFresh(server, open.accountId())).isEmpty();
                    failed++;
                } else {
                    assertSucceeded(results.get(c));
                }
            }
            assertThat(failed).isEqualTo(2);
            for (int i = 0; i < 8; i++) {
                assertThat(PostgresRing.storedDeposits(server, "tr-" + i)).containsExactly((long) i + 1);
            }
        } finally {
            try (Connection admin = server.connect(); Statement statement = admin.createStatement()) {
                statement.execute("DROP TRIGGER refuse_rows ON DomainEventEntry");
                statement.execute("DROP FUNCTION refuse_rows()");
            }
        }
    }

    @Test
    void connectionKilledDuringTheAppendFailsTheWholeBatchAndTheBusCarriesOn() throws Exception {
        Faults faults = new Faults();
        try (PostgresRing ring = new PostgresRing(server, faults, b -> b.handlerThreads(1))) {
            List<String> accounts = List.of("kill-1", "kill-2", "kill-3", "kill-4");
            ring.sendAndWait(new Open("kill-gate"));
            for (String account : accounts) {
                ring.sendAndWait(new Open(account));
                ring.sendAndWait(new Deposit(account, 100));
            }
            faults.target = "kill-1";
            faults.action = connection -> server.terminateBackend(
                    connection.unwrap(PGConnection.class).getBackendPID());

            List<Object> batch = new ArrayList<>();
            for (String account : accounts) {
                batch.add(new Deposit(account, 1));
                batch.add(new Deposit(account, 2));
            }
            List<CompletableFuture<CommandResultMessage<Object>>> results =
                    dispatchAsOneBatch(ring, faults, "kill-gate", batch.toArray());

            Throwable first = failureOf(results.get(0));
            CompletableFuture.allOf(results.toArray(new CompletableFuture<?>[0])).join();
            assertThat(faults.faultsRun).hasValue(1);
            assertThat(hasCause(first, SQLException.class)).as("%s", first).isTrue();
            // Each caller is told of its own account and the real cause, not of the batch's first event as "already
            // inserted" (Axon's engine message for any failed append of a domain event).
            for (int i = 0; i < results.size(); i++) {
                Throwable failure = failureOf(results.get(i));
                assertThat(failure.getCause()).isSameAs(first.getCause());
                assertThat(failure).hasMessageContaining("aggregate [" + accounts.get(i / 2) + "]")
                                   .hasMessageContaining("could not be reached")
                                   // The driver's own words: "An I/O error occurred" up to pgjdbc 42.7.10, the
                                   // server's FATAL "terminating connection" from 42.7.14 on.
                                   .hasMessageContaining("cause: PSQLException")
                                   .hasMessageNotContaining("already inserted");
            }
            for (String account : accounts) {
                assertThat(PostgresRing.storedDeposits(server, account)).containsExactly(100L);
            }

            // The next commands reload the aggregates and succeed on a new connection.
            for (String account : accounts) {
                CommandResultMessage<Object> next = ring.sendAndWait(new Deposit(account, 5));
                assertThat(next.isExceptional()).as("%s", next.optionalExceptionResult()).isFalse();
                assertThat(next.getPayload()).isEqualTo(105L);
                assertThat(PostgresRing.storedDeposits(server, account)).containsExactly(100L, 5L);
            }
        }
    }

    @Test
    void connectionKilledBeforeTheCommitFailsTheWholeBatchAndWritesNothing() throws Exception {
        Faults faults = new Faults();
        try (PostgresRing ring = new PostgresRing(server, faults, b -> b.handlerThreads(1))) {
            List<String> accounts = List.of("commit-1", "commit-2", "commit-3");
            ring.sendAndWait(new Open("commit-gate"));
            for (String account : accounts) {
                ring.sendAndWait(new Open(account));
            }
            AtomicInteger backend = new AtomicInteger();
            faults.target = "commit-1";
            faults.action = connection -> {
                backend.set(connection.unwrap(PGConnection.class).getBackendPID());
                ring.storeTransactions.beforeCommit = () -> {
                    ring.storeTransactions.beforeCommit = null;
                    try {
                        server.terminateBackend(backend.get());
                    } catch (SQLException e) {
                        throw new IllegalStateException(e);
                    }
                };
            };

            List<CompletableFuture<CommandResultMessage<Object>>> results = dispatchAsOneBatch(
                    ring, faults, "commit-gate",
                    new Deposit("commit-1", 1), new Deposit("commit-2", 2), new Deposit("commit-3", 3),
                    new Deposit("commit-1", 4));

            Throwable first = failureOf(results.get(0));
            assertThat(first.getCause()).hasMessageContaining("Could not commit");
            List<String> targets = List.of("commit-1", "commit-2", "commit-3", "commit-1");
            for (int i = 0; i < results.size(); i++) {
                Throwable failure = failureOf(results.get(i));
                assertThat(failure).isInstanceOf(CommitOutcomeUnknownException.class)
                                   .hasMessageContaining("aggregate [" + targets.get(i) + "]");
                assertThat(failure.getCause()).isSameAs(first.getCause());
            }
            for (String account : accounts) {
                assertThat(PostgresRing.storedDeposits(server, account)).isEmpty();
            }

            CommandResultMessage<Object> next = ring.sendAndWait(new Deposit("commit-1", 8));
            assertThat(next.isExceptional()).as("%s", next.optionalExceptionResult()).isFalse();
            assertThat(next.getPayload()).isEqualTo(8L);
            assertThat(PostgresRing.storedDeposits(server, "commit-1")).containsExactly(8L);
        }
    }

    @Test
    void databaseStoppedAndRestartedFailsCommandsDuringTheOutageOnlyAndTheBusCarriesOn() throws Exception {
        try (PostgresRing ring = new PostgresRing(server)) {
            ring.sendAndWait(new Open("outage-cached"));
            ring.sendAndWait(new Deposit("outage-cached", 10));
            // An aggregate the bus has never loaded: its next command must read it from the database.
            PGSimpleDataSource other = new PGSimpleDataSource();
            other.setUrl(server.jdbcUrl());
            PostgresServer.engine(new JdbcTransactionManager(other)).appendEvents(
                    new GenericDomainEventMessage<>("Account", "outage-cold", 0, new Opened("outage-cold")));

            server.stop();
            try {
                CommandResultMessage<Object> cached = ring.sendAndWait(new Deposit("outage-cached", 1));
                CommandResultMessage<Object> cold = ring.sendAndWait(new Deposit("outage-cold", 2));

                // The pool may still hand out a connection of the stopped server (the append then fails on it),
                // or none at all (no transaction begins): either way a JDBC failure reaches the caller.
                assertThat(cached.isExceptional()).isTrue();
                assertThat(hasCause(cached.exceptionResult(), SQLException.class))
                        .as("%s", cached.exceptionResult()).isTrue();
                assertThat(cold.isExceptional()).isTrue();
                assertThat(hasCause(cold.exceptionResult(), SQLException.class))
                        .as("%s", cold.exceptionResult()).isTrue();
            } finally {
                server.restart();
            }
            awaitConnection(ring);
            // The bus's reads failed at once while the server was away; they try it again at most 0.5 s after the
            // last failed try (FailFastReads), or at once when a batch is stored.
            Thread.sleep(600);

            CommandResultMessage<Object> cached = ring.sendAndWait(new Deposit("outage-cached", 3));
            CommandResultMessage<Object> cold = ring.sendAndWait(new Deposit("outage-cold", 4));
            assertThat(cached.isExceptional()).as("%s", cached.optionalExceptionResult()).isFalse();
            assertThat(cached.getPayload()).isEqualTo(13L);
            assertThat(cold.isExceptional()).as("%s", cold.optionalExceptionResult()).isFalse();
            assertThat(cold.getPayload()).isEqualTo(4L);
            assertThat(ring.sendAndWait(new GetBalance("outage-cached")).getPayload()).isEqualTo(13L);
            assertThat(PostgresRing.storedDeposits(server, "outage-cached")).containsExactly(10L, 3L);
            assertThat(PostgresRing.storedDeposits(server, "outage-cold")).containsExactly(4L);
        }
    }
}
