package io.github.ringbus.benchmarks;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import io.github.ringbus.RingCommandBus;
import java.util.ArrayList;
import org.axonframework.commandhandling.CommandMessage;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandBus;

/**
 * One dispatching thread's batch of {@value #SIZE} {@link Account.Deposit} commands: one for each account,
 * in an order shuffled once per thread, so that threads do not hit the same accounts in step.
 */
public final class DepositBatch {

    /** Commands in a batch: one per account. */
    public static final int SIZE = BankApplication.ACCOUNTS;

    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(60);

    private final Account.Deposit[] deposits = new Account.Deposit[SIZE];
    private final BatchCompletion completion = new BatchCompletion(TIMEOUT_NANOS);

    /** The batch of the dispatching thread numbered {@code threadIndex}. */
    public DepositBatch(int threadIndex) {
        List<String> accounts = new ArrayList<>(SIZE);
        for (int i = 0; i < SIZE; i++) {
            accounts.add(BankApplication.accountId(i));
        }
        Collections.shuffle(accounts, new Random(threadIndex));
        for (int i = 0; i < SIZE; i++) {
            deposits[i] = new Account.Deposit(accounts.get(i), 1);
        }
    }

    /**
     * Dispatches the whole batch on {@code commandBus} and returns when every command has completed.
     *
     * @throws IllegalStateException if a command failed or did not complete within a minute
     */
    public void dispatchTo(CommandBus commandBus) {
        completion.expect(SIZE);
        for (Account.Deposit deposit : deposits) {
            commandBus.dispatch(asCommandMessage(deposit), completion);
        }
        completion.await();
    }

    /**
     * Dispatches the whole batch on ringbus with one {@link RingCommandBus#dispatchAll} and returns when every command
     * has completed. The command messages are made here, as {@link #dispatchTo} makes them.
     *
     * @throws IllegalStateException if a command failed or did not complete within a minute
     */
    public void dispatchAllTo(RingCommandBus commandBus) {
        completion.expect(SIZE);
        List<CommandMessage<?>> commands = new ArrayList<>(SIZE);
        for (Account.Deposit deposit : deposits) {
            commands.add(asCommandMessage(deposit));
        }
        commandBus.dispatchAll(commands, completion);
        completion.await();
    }

    /** Deposit number {@code index} of the batch, counting round. */
    public Account.Deposit deposit(long index) {
        return deposits[(int) (index % SIZE)];
    }
}
