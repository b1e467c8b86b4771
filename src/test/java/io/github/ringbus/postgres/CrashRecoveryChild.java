package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;

import java.io.PrintStream;
import java.util.Random;
import java.util.concurrent.Semaphore;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * The process {@link CrashRecoveryTest} kills: a ringbus with its default settings on Axon's JDBC engine, group
 * committing to the PostgreSQL server at the given URL, driven by several dispatching threads until it is killed.
 * It reports every callback on standard output, one line each, only after the callback ran: {@code OK amount account}
 * for a success, {@code FAIL amount handler|other} for a failure, each ended by {@code " ."} so that a line cut short
 * by the kill is recognised. Every deposit's amount is unique in the whole test,
 * so a stored event names its command.
 * <p>
 * Arguments: JDBC URL, round, accounts per round, dispatching threads, seed.
 */
public final class CrashRecoveryChild {

    private CrashRecoveryChild() {
    }

    /** The account {@code index} opened in {@code round}. */
    static String account(int round, int index) {
        return "r" + round + "-a" + index;
    }

    /** The amount of a deposit: unique over rounds, dispatchers and their commands. */
    static long amount(int round, int dispatcher, long sequence) {
        return (round + 1L) * 1_000_000_000_000L + dispatcher * 1_000_000_000L + sequence;
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        int round = Integer.parseInt(args[1]);
        int accounts = Integer.parseInt(args[2]);
        int dispatchers = Integer.parseInt(args[3]);
        long seed = Long.parseLong(args[4]);
        int storeThreads = Integer.parseInt(args[5]);
        PrintStream out = System.out;

        HikariDataSource pool = PostgresServer.pool(url, 3 + storeThreads);
        JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
        RingEventStore eventStore = RingEventStore.builder().storageEngine(PostgresServer.engine(transactions)).build();
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).transactionManager(transactions)
                                           .storeThreads(storeThreads).build();
        bus.registerAggregate(Account.class);
        bus.start();

        for (int i = 0; i < accounts; i++) {
            FutureCallback<Object, Object> opened = new FutureCallback<>();
            bus.dispatch(asCommandMessage(new Open(account(round, i))), opened);
            CommandResultMessage<?> result = opened.getResult();
            if (result.isExceptional()) {
                throw new IllegalStateException("Could not open " + account(round, i), result.exceptionResult());
            }
        }
        out.println("READY");

        for (int d = 0; d < dispatchers; d++) {
            int dispatcher = d;
            Thread thread = new Thread(() -> dispatch(bus, out, round, accounts, dispatcher, seed), "dispatcher-" + d);
            thread.setDaemon(false);
            thread.start();
        }
    }

    private static void dispatch(RingCommandBus bus, PrintStream out, int round, int accounts, int dispatcher,
                                 long seed) {
        Random random = new Random(seed * 31 + dispatcher);
        Semaphore window = new Semaphore(256);
        for (long sequence = 0; ; sequence++) {
            window.acquireUninterruptibly();
            String account = account(random.nextInt(round + 1), random.nextInt(accounts));
            long amount = amount(round, dispatcher, sequence);
            boolean failing = random.nextInt(10) == 0;
            Object command = failing ? new DepositThenFail(account, amount) : new Deposit(account, amount);
            bus.dispatch(asCommandMessage(command), (message, result) -> {
                try {
                    if (!result.isExceptional()) {
                        out.println("OK " + amount + " " + account + " .");
                    } else {
                        out.println("FAIL " + amount + " " + (failing ? "handler" : "other") + " .");
                    }
                } finally {
                    window.release();
                }
            });
        }
    }
}
