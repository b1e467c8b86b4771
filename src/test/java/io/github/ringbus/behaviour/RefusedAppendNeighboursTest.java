package io.github.ringbus.behaviour;

import io.github.ringbus.PublishMode;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RunOnce;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import io.github.ringbus.fixtures.AccountCommands.Close;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.GetBalance;
import io.github.ringbus.fixtures.AccountCommands.Withdraw;
import io.github.ringbus.fixtures.AccountEvents.Closed;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.fixtures.AccountEvents.Withdrawn;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.fixtures.FaultyStorageEngine.HeldAppend;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * When the store refuses one command's events, the commands of the same aggregate that were handled on top of them
 * while they were on their way are handled again, in their order, on the aggregate as the store has it: only the
 * refused command fails, as on {@code SimpleCommandBus}, which handles a command only once the one before it is
 * stored. A command whose first run reached beyond its events (it sent a command, its prepare-commit handlers ran)
 * is not run again and fails as before.
 * <p>
 * Each scenario holds an append of the aggregate in the engine (a deposit of 100 to account "a") while the refused
 * deposit of 5 and the deposits after it are handled on top of each other, then lets the store go on.
 */
class RefusedAppendNeighboursTest {

    private static final Deposited REFUSED = new Deposited("a", 5);

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.engine.releaseAll();
            ring.close();
        }
    }

    static Stream<Arguments> shapes() {
        return Stream.of(
                Arguments.of("COMPACT", (UnaryOperator<RingCommandBus.Builder>) b -> b.topology(Topology.COMPACT)),
                Arguments.of("FULL, 2 handler threads", (UnaryOperator<RingCommandBus.Builder>)
                        b -> b.topology(Topology.FULL).handlerThreads(2)),
                Arguments.of("FULL, 3 store threads", (UnaryOperator<RingCommandBus.Builder>)
                        b -> b.topology(Topology.FULL).handlerThreads(2).storeThreads(3)),
                Arguments.of("FULL, AFTER_STORE", (UnaryOperator<RingCommandBus.Builder>)
                        b -> b.topology(Topology.FULL).publishMode(PublishMode.AFTER_STORE)),
                Arguments.of("COMPACT, PARALLEL (published after the store)", (UnaryOperator<RingCommandBus.Builder>)
                        b -> b.topology(Topology.COMPACT).publishMode(PublishMode.PARALLEL)));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void onlyTheRefusedCommandFailsAndTheCommandsHandledOnItAreHandledAgainOnWhatIsStored(
            String shape, UnaryOperator<RingCommandBus.Builder> settings) throws Exception {
        ring = RingbusFixture.started(settings);

        List<Outcome> outcomes = refuseFiveThenDeposit(2, 3);

        assertThat(outcomes.get(0).awaitSuccess()).isEqualTo(100L);
        assertThat(outcomes.get(1).awaitFailure()).isInstanceOf(IllegalArgumentException.class)
                                                  .hasMessageContaining(FaultyStorageEngine.INJECTED);
        assertThat(outcomes.get(2).awaitSuccess()).isEqualTo(102L); // not 107: the 5 is not stored
        assertThat(outcomes.get(3).awaitSuccess()).isEqualTo(105L);
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 100), new Deposited("a", 2), new Deposited("a", 3));
        assertThat(ring.storedSequenceNumbers("a")).containsExactly(0L, 1L, 2L, 3L);
        assertThat(outcomes).allSatisfy(outcome -> assertThat(outcome.calls()).isEqualTo(1));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(106L);
        assertThat(onSimpleCommandBus(100, 5, 2, 3, 1)).as("the same deposits on SimpleCommandBus")
                .isEqualTo(List.of("100", "IllegalArgumentException", "102", "105", "106"));
    }

    /**
     * The commands behind a refused withdrawal that store nothing (a query, a withdrawal its rule refuses) answer on
     * what is stored, as on SimpleCommandBus: their first answers, built on the refused withdrawal, are never seen.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void commandsWithoutEventsBehindARefusedCommandAnswerOnWhatIsStored(
            String shape, UnaryOperator<RingCommandBus.Builder> settings) throws Exception {
        ring = RingbusFixture.started(settings);
        Object[] commands = {new Withdraw("a", 50), new GetBalance("a"), new Withdraw("a", 80), new Deposit("a", 1)};

        List<Outcome> outcomes = holdDepositOf100ThenSend(new Withdrawn("a", 50), commands);

        assertThat(results(outcomes)).isEqualTo(
                commandsOnSimpleCommandBus(new Withdrawn("a", 50), prepend(new Deposit("a", 100), commands)))
                                     .containsExactly("100", "IllegalArgumentException", "100", "null", "21");
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 100), new Withdrawn("a", 80), new Deposited("a", 1));
        assertThat(outcomes).allSatisfy(outcome -> assertThat(outcome.calls()).isEqualTo(1));
    }

    /**
     * A refused deletion leaves the aggregate alive: the commands behind it run on it, as on SimpleCommandBus,
     * instead of failing with {@code AggregateDeletedException} on a deletion that was never stored.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void commandsBehindARefusedDeletionRunOnTheAggregateAsStored(
            String shape, UnaryOperator<RingCommandBus.Builder> settings) throws Exception {
        ring = RingbusFixture.started(settings);
        Object[] commands = {new Close("a"), new GetBalance("a"), new Deposit("a", 2)};

        List<Outcome> outcomes = holdDepositOf100ThenSend(new Closed("a"), commands);

        assertThat(results(outcomes)).isEqualTo(
                commandsOnSimpleCommandBus(new Closed("a"), prepend(new Deposit("a", 100), commands)))
                                     .containsExactly("100", "IllegalArgumentException", "100", "102");
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 100), new Deposited("a", 2));
    }

    /**
     * The commands, one after the other, on Axon's SimpleCommandBus over an engine that refuses {@code refused},
     * after account "a" was opened.
     *
     * @return each command's result: its payload, or the simple name of the exception it failed with
     */
    private static List<String> commandsOnSimpleCommandBus(Object refused, Object... commands) {
        FaultyStorageEngine engine = new FaultyStorageEngine();
        engine.refuse(refused);
        try (SimpleBusTwin twin = new SimpleBusTwin(engine)) {
            twin.send(new Open("a"));
            List<String> results = new ArrayList<>();
            for (Object command : commands) {
                var result = twin.send(command);
                results.add(result.isExceptional() ? result.exceptionResult().getClass().getSimpleName()
                                    : String.valueOf(result.getPayload()));
            }
            return results;
        }
    }

    private static List<String> results(List<Outcome> outcomes) {
        List<String> results = new ArrayList<>();
        for (Outcome outcome : outcomes) {
            var result = outcome.await();
            results.add(result.isExceptional() ? result.exceptionResult().getClass().getSimpleName()
                                : String.valueOf(result.getPayload()));
        }
        return results;
    }

    private static Object[] prepend(Object first, Object[] rest) {
        Object[] all = new Object[rest.length + 1];
        all[0] = first;
        System.arraycopy(rest, 0, all, 1, rest.length);
        return all;
    }

    /**
     * Opens account "a", holds the append of a deposit of 100 in the engine, sends the commands (the first of which
     * the store will refuse, as {@code refused}), waits until each was handled on top of the ones before it (none
     * stored yet), and lets the store go on.
     *
     * @return the outcomes of the 100 and of the commands, in that order
     */
    private List<Outcome> holdDepositOf100ThenSend(Object refused, Object... commands) throws InterruptedException {
        ring.sendAndWait(new Open("a"));
        ring.engine.refuse(refused);
        CountDownLatch handled = new CountDownLatch(commands.length);
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            try {
                return chain.proceed();
            } finally {
                if (!(unitOfWork.getMessage().getPayload() instanceof Deposit d && d.amount() == 100)) {
                    handled.countDown();
                }
            }
        });
        HeldAppend held = ring.engine.holdNextAppend();
        List<Outcome> outcomes = new ArrayList<>();
        outcomes.add(ring.send(new Deposit("a", 100)));
        held.awaitStarted();
        for (Object command : commands) {
            outcomes.add(ring.send(command));
        }
        assertThat(handled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();
        return outcomes;
    }

    /**
     * The reference: the deposits to a new account "a", one after the other, on Axon's SimpleCommandBus over an
     * engine that refuses the same event.
     *
     * @return each deposit's result: the balance, or the simple name of the exception it failed with
     */
    private static List<String> onSimpleCommandBus(long... amounts) {
        Object[] deposits = new Object[amounts.length];
        for (int i = 0; i < amounts.length; i++) {
            deposits[i] = new Deposit("a", amounts[i]);
        }
        return commandsOnSimpleCommandBus(REFUSED, deposits);
    }

    /**
     * After the held append is let go nothing else is sent: the handler thread waits for commands, and the store
     * thread's request must wake it, whatever it waits with.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(WaitStrategyChoice.class)
    void aWaitingHandlerThreadIsWokenToHandleTheCommandsAgainWhateverItsWaitStrategy(WaitStrategyChoice strategy)
            throws Exception {
        ring = RingbusFixture.started(b -> b.topology(Topology.FULL).handlerThreads(1).waitStrategy(strategy));

        List<Outcome> outcomes = refuseFiveThenDeposit(2);

        assertThat(outcomes.get(1).awaitFailure()).isInstanceOf(IllegalArgumentException.class);
        assertThat(outcomes.get(2).awaitSuccess()).isEqualTo(102L);
    }

    @Test
    void aCommandWhoseHandlerSentACommandIsNotHandledAgainAndTheCommandsAfterItAre() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.sendAndWait(new Open("b"));
        onDepositOf(2, unitOfWork -> ring.bus.dispatch(asCommandMessage(new Deposit("b", 1))));

        List<Outcome> outcomes = refuseFiveThenDeposit(2, 3);

        assertThat(outcomes.get(2).awaitFailure()).isInstanceOf(EventStoreException.class)
                                                  .hasMessageContaining("failed to be stored");
        assertThat(outcomes.get(3).awaitSuccess()).isEqualTo(103L); // run again without the 5 and the 2
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 100), new Deposited("a", 3));
        assertThat(ring.balanceOf("b")).isEqualTo(1L); // sent once, not once per run
    }

    @Test
    void aCommandWhosePrepareCommitHandlersRanIsNotHandledAgain() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        AtomicInteger prepared = new AtomicInteger();
        onDepositOf(2, unitOfWork -> unitOfWork.onPrepareCommit(u -> prepared.incrementAndGet()));

        List<Outcome> outcomes = refuseFiveThenDeposit(2, 3);

        assertThat(outcomes.get(2).awaitFailure()).isInstanceOf(EventStoreException.class)
                                                  .hasMessageContaining("failed to be stored");
        assertThat(outcomes.get(3).awaitSuccess()).isEqualTo(103L);
        assertThat(prepared).hasValue(1);
    }

    @Test
    void aCommandWhoseHandlerMarkedItsUnitOfWorkRunOnceIsNotHandledAgain() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        onDepositOf(2, unitOfWork -> RunOnce.markCurrentUnitOfWork());

        List<Outcome> outcomes = refuseFiveThenDeposit(2, 3);

        assertThat(outcomes.get(2).awaitFailure()).isInstanceOf(EventStoreException.class)
                                                  .hasMessageContaining("failed to be stored");
        assertThat(outcomes.get(3).awaitSuccess()).isEqualTo(103L);
    }

    @Test
    void theDiscardedRunIsRolledBackAndOnlyTheRunThatIsStoredCommits() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        AtomicInteger rolledBack = new AtomicInteger();
        AtomicInteger committed = new AtomicInteger();
        onDepositOf(2, unitOfWork -> {
            unitOfWork.onRollback(u -> rolledBack.incrementAndGet());
            unitOfWork.afterCommit(u -> committed.incrementAndGet());
        });

        List<Outcome> outcomes = refuseFiveThenDeposit(2);

        assertThat(outcomes.get(2).awaitSuccess()).isEqualTo(102L);
        assertThat(rolledBack).hasValue(1);
        assertThat(committed).hasValue(1);
    }

    /**
     * The store thread waits for a handler thread that is busy in a handler when the bus shuts down: it gives up the
     * re-run, the command built on the refused one fails as it did before re-runs existed, and nothing hangs.
     */
    @Test
    void aBusShuttingDownWhileTheHandlerThreadIsBusyFailsTheCommandsBuiltOnTheRefusedOneAsBefore() throws Exception {
        ring = RingbusFixture.started(b -> b.topology(Topology.COMPACT).shutdownTimeout(Duration.ofMillis(500)));
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch blocking = new CountDownLatch(1);
        ring.bus.subscribe(RingbusFixture.BLOCK, RingbusFixture.blockingHandler(release));
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getCommandName().equals(RingbusFixture.BLOCK)) {
                blocking.countDown();
            }
            return chain.proceed();
        });
        ring.sendAndWait(new Open("a"));
        ring.engine.refuse(REFUSED);
        CountDownLatch handled = handledDeposits(2);
        try {
            HeldAppend held = ring.engine.holdNextAppend();
            Outcome gate = ring.send(new Deposit("a", 100));
            held.awaitStarted();
            Outcome refused = ring.send(new Deposit("a", 5));
            Outcome builtOnIt = ring.send(new Deposit("a", 2));
            // Both handled before the blocking command is sent: the handler thread's batch that held them has ended
            // (a batch is what was published when it began), so the store thread can take them.
            assertThat(handled.await(10, TimeUnit.SECONDS)).isTrue();
            ring.send(RingbusFixture.blockCommand("keeps the handler thread busy"));
            assertThat(blocking.await(10, TimeUnit.SECONDS)).isTrue();
            held.release(); // the store thread now asks the busy handler thread to run the deposit of 2 again

            RingbusFixture closing = ring;
            ring = null;
            assertTimeoutPreemptively(Duration.ofSeconds(15), closing::close, "the bus hung at shutdown");

            assertThat(gate.awaitSuccess()).isEqualTo(100L);
            assertThat(refused.awaitFailure()).isInstanceOf(IllegalArgumentException.class);
            assertThat(builtOnIt.awaitFailure()).isInstanceOf(EventStoreException.class)
                                                .hasMessageContaining("failed to be stored");
            assertThat(List.of(gate, refused, builtOnIt)).allSatisfy(o -> assertThat(o.calls()).isEqualTo(1));
        } finally {
            release.countDown();
        }
    }

    /**
     * One dispatcher sends 1,500 deposits of distinct amounts to one account while the store refuses every 97th:
     * exactly the refused ones fail, every other one is stored once, in the order it was sent, and each caller is told
     * the balance of what is stored up to its deposit (so each ran on exactly the deposits stored before it).
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("shapes")
    void underLoadOnlyTheRefusedCommandsFailAndTheOthersAreStoredInTheirOrder(
            String shape, UnaryOperator<RingCommandBus.Builder> settings) {
        ring = RingbusFixture.started(settings);
        ring.sendAndWait(new Open("a"));
        int count = 1_500;
        for (int amount = 97; amount <= count; amount += 97) {
            ring.engine.refuse(new Deposited("a", amount));
        }
        List<Outcome> outcomes = new ArrayList<>();
        for (int amount = 1; amount <= count; amount++) {
            outcomes.add(ring.send(new Deposit("a", amount)));
        }

        List<Object> expectedStored = new ArrayList<>(List.of(new Opened("a")));
        long balance = 0;
        for (int amount = 1; amount <= count; amount++) {
            Outcome outcome = outcomes.get(amount - 1);
            if (amount % 97 == 0) {
                assertThat(outcome.awaitFailure()).as("deposit %d", amount)
                                                  .isInstanceOf(IllegalArgumentException.class);
            } else {
                balance += amount;
                assertThat(outcome.awaitSuccess()).as("deposit %d", amount).isEqualTo(balance);
                expectedStored.add(new Deposited("a", amount));
            }
            assertThat(outcome.calls()).isEqualTo(1);
        }
        assertThat(ring.storedPayloads("a")).containsExactlyElementsOf(expectedStored);
        assertThat(ring.storedSequenceNumbers("a")).hasSize(expectedStored.size())
                                                   .isSorted().doesNotHaveDuplicates()
                                                   .endsWith((long) expectedStored.size() - 1);
    }

    /**
     * Opens account "a", holds the append of a deposit of 100 in the engine, sends the refused deposit of 5 and then
     * the given deposits, waits until all of them were handled (on top of each other, none stored yet), and lets the
     * store go on.
     *
     * @return the outcomes of the 100, the 5 and the given deposits, in that order
     */
    private List<Outcome> refuseFiveThenDeposit(long... amounts) throws InterruptedException {
        ring.sendAndWait(new Open("a"));
        ring.engine.refuse(REFUSED);
        CountDownLatch handled = handledDeposits(1 + amounts.length);
        HeldAppend held = ring.engine.holdNextAppend();
        List<Outcome> outcomes = new ArrayList<>();
        outcomes.add(ring.send(new Deposit("a", 100)));
        held.awaitStarted();
        outcomes.add(ring.send(new Deposit("a", 5)));
        for (long amount : amounts) {
            outcomes.add(ring.send(new Deposit("a", amount)));
        }
        assertThat(handled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();
        return outcomes;
    }

    /**
     * A latch counted down on the handler thread, after the handler ran, for each deposit to account "a" other than the
     * held deposit of 100.
     */
    private CountDownLatch handledDeposits(int count) {
        CountDownLatch handled = new CountDownLatch(count);
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            Object result = chain.proceed();
            if (unitOfWork.getMessage().getPayload() instanceof Deposit d && d.accountId().equals("a")
                    && d.amount() != 100) {
                handled.countDown();
            }
            return result;
        });
        return handled;
    }

    /** Runs {@code action} in the Unit of Work of each run of a deposit of this amount to account "a". */
    private void onDepositOf(long amount, Consumer<UnitOfWork<?>> action) {
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Deposit d && d.accountId().equals("a")
                    && d.amount() == amount) {
                action.accept(unitOfWork);
            }
            return chain.proceed();
        });
    }
}
