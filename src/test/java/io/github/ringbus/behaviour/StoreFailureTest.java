package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.fixtures.FaultyStorageEngine.HeldAppend;
import io.github.ringbus.PublishMode;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What happens when the event store refuses an append: the commands whose events were in it are told so, nothing of
 * theirs is stored, every command that built on those events fails as well instead of being stored on top of events
 * that do not exist, and the aggregate's next command starts again from what is really stored. Other aggregates go on
 * as if nothing happened.
 * <p>
 * The store is Axon's in-memory storage engine behind a {@link FaultyStorageEngine}, wrapped in a
 * {@code RingEventStore}. Where the test needs to know which commands share an append, it holds the append inside the
 * engine until the commands it cares about have been handled.
 */
class StoreFailureTest {

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    @Test
    void commandWhoseAppendFailsReceivesTheStoresException() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));
        ring.engine.failAppends(true);

        Outcome deposit = ring.send(new Deposit("a", 5));

        assertThat(deposit.awaitFailure()).isInstanceOf(EventStoreException.class)
                                          .hasMessageContaining(FaultyStorageEngine.INJECTED)
                                          .hasMessageContaining(new Deposited("a", 5).toString());
        assertThat(deposit.calls()).isEqualTo(1);
        ring.engine.failAppends(false);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void nextCommandSeesOnlyWhatIsReallyStored() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));
        assertThat(ring.sendAndWait(new Deposit("a", 10)).getPayload()).isEqualTo(10L);
        ring.engine.failAppends(true);
        assertThat(ring.sendAndWait(new Deposit("a", 5)).isExceptional()).isTrue();
        ring.engine.failAppends(false);

        Object balance = ring.sendAndWait(new Deposit("a", 1)).getPayload();

        assertThat(balance).isEqualTo(11L);
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 10), new Deposited("a", 1));
        assertThat(ring.storedSequenceNumbers("a")).containsExactly(0L, 1L, 2L);
    }

    /**
     * The commands handled on top of events whose append fails are handled again, in their order, on the aggregate
     * as the store has it, as {@code SimpleCommandBus} (which handles each command only once the one before it is
     * stored) would have handled them: only the refused command fails.
     */
    @Test
    void commandsHandledOnTopOfEventsWhoseAppendFailsAreHandledAgainOnWhatIsStored() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 10));
        CountDownLatch laterDepositsHandled = handledLatch(2, 2L, 3L);

        HeldAppend failing = ring.engine.holdAndFailNextAppend();
        Outcome deposit5 = ring.send(new Deposit("a", 5));
        failing.awaitStarted(); // deposit 5 is alone in the append now held in the engine
        Outcome deposit2 = ring.send(new Deposit("a", 2));
        Outcome deposit3 = ring.send(new Deposit("a", 3));
        assertThat(laterDepositsHandled.await(10, TimeUnit.SECONDS)).isTrue(); // handled on top of deposit 5
        failing.release();

        assertThat(deposit5.awaitFailure()).isInstanceOf(EventStoreException.class)
                                           .hasMessageContaining(FaultyStorageEngine.INJECTED);
        assertThat(deposit2.awaitSuccess()).isEqualTo(12L); // not 17: deposit 5 is not stored
        assertThat(deposit3.awaitSuccess()).isEqualTo(15L);
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(16L);
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 10), new Deposited("a", 2), new Deposited("a", 3),
                new Deposited("a", 1));
        assertThat(ring.storedSequenceNumbers("a")).containsExactly(0L, 1L, 2L, 3L, 4L);
        assertThat(List.of(deposit5, deposit2, deposit3)).allSatisfy(o -> assertThat(o.calls()).isEqualTo(1));
    }

    @Test
    void otherAggregatesAreUnaffectedByAnotherAggregatesFailedAppend() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(2));
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Open("b"));
        ring.sendAndWait(new Deposit("b", 5));
        CountDownLatch bDepositsHandled = handledLatch(2, 1L, 2L);

        HeldAppend failing = ring.engine.holdAndFailNextAppend();
        Outcome depositA = ring.send(new Deposit("a", 5));
        failing.awaitStarted();
        Outcome depositB1 = ring.send(new Deposit("b", 1));
        Outcome depositB2 = ring.send(new Deposit("b", 2));
        assertThat(bDepositsHandled.await(10, TimeUnit.SECONDS)).isTrue();
        failing.release();

        assertThat(depositA.awaitFailure()).isInstanceOf(EventStoreException.class);
        assertThat(depositB1.awaitSuccess()).isEqualTo(6L);
        assertThat(depositB2.awaitSuccess()).isEqualTo(8L);
        assertThat(ring.storedPayloads("b")).containsExactly(
                new Opened("b"), new Deposited("b", 5), new Deposited("b", 1), new Deposited("b", 2));
        assertThat(ring.storedSequenceNumbers("b")).containsExactly(0L, 1L, 2L, 3L);
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(1L);
    }

    /**
     * A failure of a whole append that does not recur (here injected once, an exception that says nothing about its
     * cause) is not taken as the failure of every command in it: the store stage appends the commands apart, in fresh
     * transactions, and each one that the store then takes is stored, exactly once. (Until the store stage isolated
     * every failure, this failed both commands.)
     */
    @Test
    void failedAppendIsRetriedApartAndEveryCommandTheStoreThenTakesIsStoredOnce() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Open("b"));
        ring.sendAndWait(new Open("c"));

        List<Outcome> outcomes = ring.sendAsOneBatch(new Deposit("c", 1), ring.engine::failNextAppend,
                                                     new Deposit("a", 5), new Deposit("b", 5));

        assertThat(outcomes.get(0).awaitSuccess()).isEqualTo(5L);
        assertThat(outcomes.get(1).awaitSuccess()).isEqualTo(5L);
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 5));
        assertThat(ring.storedPayloads("b")).containsExactly(new Opened("b"), new Deposited("b", 5));
        assertThat(ring.sendAndWait(new Deposit("a", 2)).getPayload()).isEqualTo(7L);
    }

    /**
     * A value of one command that the database refuses (Axon's {@link EventStoreException}, caused by SQLState 22001)
     * fails only that command: the store stage appends the rest of the batch without it. The batch is put together as
     * in the test above. (A conflict with another writer's append is handled again: {@link AnotherWriterTest}.)
     */
    @Test
    void aRefusedValueOfOneCommandFailsOnlyThatCommandAndTheRestOfItsBatchIsStored() throws Exception {
        // The held append blocks the store stage while the publish stage goes on: the FULL topology.
        ring = RingbusFixture.started(b -> b.handlerThreads(1).publishMode(PublishMode.PARALLEL)
                                           .topology(Topology.FULL));
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Open("b"));
        ring.sendAndWait(new Open("c"));
        ring.engine.refuseDataOf(new Deposited("a", 5));
        CountDownLatch allPublished = publishedLatch(3);

        HeldAppend held = ring.engine.holdNextAppend();
        Outcome depositC = ring.send(new Deposit("c", 1));
        held.awaitStarted();
        Outcome depositB = ring.send(new Deposit("b", 5));
        Outcome refused = ring.send(new Deposit("a", 5));
        Outcome depositB2 = ring.send(new Deposit("b", 5));
        assertThat(allPublished.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(depositC.awaitSuccess()).isEqualTo(1L);
        assertThat(refused.awaitFailure()).isInstanceOf(EventStoreException.class)
                                          .hasMessageContaining("on aggregate [a] failed: the event store refused")
                                          .hasMessageContaining("[SQLState 22001]: value too long")
                                          .cause().hasMessageContaining("data refused: " + new Deposited("a", 5));
        assertThat(depositB.awaitSuccess()).isEqualTo(5L);
        assertThat(depositB2.awaitSuccess()).isEqualTo(10L);
        assertThat(ring.storedPayloads("b")).containsExactly(
                new Opened("b"), new Deposited("b", 5), new Deposited("b", 5));
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
        assertThat(ring.sendAndWait(new Deposit("a", 2)).getPayload()).isEqualTo(2L);
    }

    /**
     * When one command of a batch is refused, the commands of the same aggregate handled on top of it in that batch
     * fail as well (they built on events that are not stored, and are not handled again: a refused value would be
     * refused again); the batch's other commands are stored.
     */
    @Test
    void aRefusedValueAlsoFailsTheCommandsOfTheSameBatchThatBuiltOnIt() throws Exception {
        // The held append blocks the store stage while the publish stage goes on: the FULL topology.
        ring = RingbusFixture.started(b -> b.handlerThreads(1).publishMode(PublishMode.PARALLEL)
                                           .topology(Topology.FULL));
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Open("b"));
        ring.sendAndWait(new Open("c"));
        ring.engine.refuseDataOf(new Deposited("a", 5));
        CountDownLatch allPublished = publishedLatch(3);

        HeldAppend held = ring.engine.holdNextAppend();
        Outcome depositC = ring.send(new Deposit("c", 1));
        held.awaitStarted();
        Outcome refused = ring.send(new Deposit("a", 5));
        Outcome builtOnIt = ring.send(new Deposit("a", 6));
        Outcome depositB = ring.send(new Deposit("b", 5));
        assertThat(allPublished.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(depositC.awaitSuccess()).isEqualTo(1L);
        assertThat(refused.awaitFailure()).isInstanceOf(EventStoreException.class)
                                          .hasMessageContaining("on aggregate [a] failed: the event store refused");
        assertThat(builtOnIt.awaitFailure()).isInstanceOf(EventStoreException.class)
                                            .hasMessageContaining("aggregate [a]")
                                            .hasMessageContaining("failed to be stored");
        assertThat(depositB.awaitSuccess()).isEqualTo(5L);
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
        assertThat(ring.storedPayloads("b")).containsExactly(new Opened("b"), new Deposited("b", 5));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(1L);
    }

    /**
     * A store failure that is not a recognised conflict (here a plain {@link IllegalArgumentException} from the
     * engine, as a column too short, a constraint the bus does not know or a bug of the engine would raise) fails
     * only the commands whose events the store refuses, as on a bus that stores each command in its own transaction:
     * 2 bad commands among 10 of one batch, 2 fail, 8 are stored.
     */
    @Test
    void anyFailureOfTheAppendFailsOnlyTheCommandsWhoseEventsTheStoreRefuses() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.sendAndWait(new Open("gate"));
        for (int i = 0; i < 10; i++) {
            ring.sendAndWait(new Open("acc-" + i));
        }
        ring.engine.refuse(new Deposited("acc-3", 30));
        ring.engine.refuse(new Deposited("acc-7", 70));
        Object[] deposits = new Object[10];
        for (int i = 0; i < 10; i++) {
            deposits[i] = new Deposit("acc-" + i, i * 10L);
        }

        List<Outcome> outcomes = ring.sendAsOneBatch(new Deposit("gate", 1), deposits);

        for (int i = 0; i < 10; i++) {
            if (i == 3 || i == 7) {
                assertThat(outcomes.get(i).awaitFailure()).isInstanceOf(IllegalArgumentException.class)
                                                          .hasMessageContaining("value refused")
                                                          .hasMessageContaining("acc-" + i);
                assertThat(ring.storedPayloads("acc-" + i)).containsExactly(new Opened("acc-" + i));
            } else {
                assertThat(outcomes.get(i).awaitSuccess()).isEqualTo(i * 10L);
                assertThat(ring.storedPayloads("acc-" + i)).containsExactly(
                        new Opened("acc-" + i), new Deposited("acc-" + i, i * 10L));
            }
        }
        assertThat(outcomes).allSatisfy(o -> assertThat(o.calls()).isEqualTo(1));
        assertThat(ring.sendAndWait(new Deposit("acc-3", 1)).getPayload()).isEqualTo(1L);
    }

    /**
     * When the store cannot be reached (a connection failure), appending the commands apart would only fail again:
     * every command of the batch fails with that one failure as the cause, each told of its own aggregate and the
     * failure's root cause, and nothing is stored.
     */
    @Test
    void unreachableStoreFailsEveryCommandOfTheBatchEachToldOfItsOwnAggregateAndTheCause() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.sendAndWait(new Open("gate"));
        for (int i = 0; i < 4; i++) {
            ring.sendAndWait(new Open("acc-" + i));
        }
        int appendsBefore = ring.engine.storingThreads().size();

        List<Outcome> outcomes = ring.sendAsOneBatch(new Deposit("gate", 1), ring.engine::failNextAppendUnreachable,
                                                     new Deposit("acc-0", 1),
                                                     new Deposit("acc-1", 2), new Deposit("acc-2", 3),
                                                     new Deposit("acc-3", 4));

        Throwable cause = outcomes.get(0).awaitFailure().getCause();
        assertThat(cause).isInstanceOf(EventStoreException.class).hasMessageContaining("unreachable");
        for (int i = 0; i < outcomes.size(); i++) {
            Throwable failure = outcomes.get(i).awaitFailure();
            assertThat(failure).isInstanceOf(EventStoreException.class)
                               .hasMessageContaining("[" + Deposit.class.getName() + "] on aggregate [acc-" + i + "]")
                               .hasMessageContaining("could not be reached")
                               .hasMessageContaining("SQLTransientConnectionException [SQLState 08001]");
            assertThat(failure.getCause()).isSameAs(cause);
        }
        for (int i = 0; i < 4; i++) {
            assertThat(ring.storedPayloads("acc-" + i)).containsExactly(new Opened("acc-" + i));
        }
        assertThat(ring.engine.storingThreads()).hasSize(appendsBefore + 1); // the gate's only
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void creationWhoseAppendFailsLeavesNoAggregateSoTheCreationCanBeRetried() {
        ring = RingbusFixture.started();
        ring.engine.failAppends(true);
        Throwable failure = ring.send(new Open("c")).awaitFailure();
        ring.engine.failAppends(false);
        assertThat(failure).isInstanceOf(EventStoreException.class).hasMessageContaining(new Opened("c").toString());

        Throwable notFound = ring.send(new Deposit("c", 1)).awaitFailure();
        assertThat(notFound).isInstanceOf(AggregateNotFoundException.class);
        assertThat(((AggregateNotFoundException) notFound).getAggregateIdentifier()).isEqualTo("c");

        assertThat(ring.sendAndWait(new Open("c")).getPayload()).isEqualTo("c");
        assertThat(ring.sendAndWait(new Deposit("c", 2)).getPayload()).isEqualTo(2L);
        assertThat(ring.storedPayloads("c")).containsExactly(new Opened("c"), new Deposited("c", 2));
        assertThat(ring.storedSequenceNumbers("c")).containsExactly(0L, 1L);
    }

    @Test
    void withAPlainEmbeddedEventStoreAFailedAppendIsReportedAndTheNextCommandSeesOnlyWhatIsStored() {
        ring = RingbusFixture.startedOnEmbeddedEventStore();
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 10));
        ring.engine.failAppends(true);

        Throwable failure = ring.send(new Deposit("a", 5)).awaitFailure();
        ring.engine.failAppends(false);

        assertThat(failure).isInstanceOf(EventStoreException.class)
                           .hasMessageContaining(FaultyStorageEngine.INJECTED);
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(11L);
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 10), new Deposited("a", 1));
        assertThat(ring.storedSequenceNumbers("a")).containsExactly(0L, 1L, 2L);
    }

    /**
     * A subscriber ({@code IN_TRANSACTION}) that refuses one command fails that command alone: the commands of its
     * aggregate before it in the same batch built on nothing it did, and are stored; the one handled on top of it is
     * handled again on what is stored, as on a bus that stores each command in its own transaction.
     */
    @Test
    void aSubscriberThatRefusesACommandFailsThatCommandAloneInItsBatch() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1).topology(Topology.FULL));
        ring.sendAndWait(new Open("gate"));
        ring.sendAndWait(new Open("a"));
        ring.ringEventStore().subscribe(events -> {
            if (events.stream().anyMatch(e -> e.getPayload().equals(new Deposited("a", 3)))) {
                throw new IllegalStateException("the subscriber refuses deposit 3");
            }
        });
        CountDownLatch allHandled = handledLatch(4, 1L, 2L, 3L, 4L);

        HeldAppend held = ring.engine.holdNextAppend();
        Outcome gate = ring.send(new Deposit("gate", 100));
        held.awaitStarted(); // the store stage is inside the gate's append: the next four form one batch
        Outcome first = ring.send(new Deposit("a", 1));
        Outcome second = ring.send(new Deposit("a", 2));
        Outcome refused = ring.send(new Deposit("a", 3));
        Outcome builtOnIt = ring.send(new Deposit("a", 4));
        assertThat(allHandled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(gate.awaitSuccess()).isEqualTo(100L);
        assertThat(first.awaitSuccess()).isEqualTo(1L);
        assertThat(second.awaitSuccess()).isEqualTo(3L);
        assertThat(refused.awaitFailure()).isInstanceOf(IllegalStateException.class)
                                          .hasMessage("the subscriber refuses deposit 3");
        assertThat(builtOnIt.awaitSuccess()).isEqualTo(7L); // 1 + 2 + 4: run again without deposit 3
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 1), new Deposited("a", 2), new Deposited("a", 4));
        assertThat(ring.sendAndWait(new Deposit("a", 10)).getPayload()).isEqualTo(17L);
    }

    /**
     * A latch counted down by a subscriber for each published deposit of 5 or more. In {@code PARALLEL} publish mode
     * (which the tests using it choose) a command is published only once the handle stage is past it, whatever the store stage does: a
     * published deposit will be in the store stage's next batch.
     */
    private CountDownLatch publishedLatch(int count) {
        CountDownLatch latch = new CountDownLatch(count);
        ring.ringEventStore().subscribe(events -> events.stream()
                .filter(e -> e.getPayload() instanceof Deposited d && d.amount() >= 5)
                .forEach(e -> latch.countDown()));
        return latch;
    }

    /**
     * A latch counted down on the handler thread, after the handler ran, for each deposit of one of the amounts.
     */
    private CountDownLatch handledLatch(int count, Long... amounts) {
        List<Long> watched = new CopyOnWriteArrayList<>(amounts);
        CountDownLatch latch = new CountDownLatch(count);
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            Object result = chain.proceed();
            if (unitOfWork.getMessage().getPayload() instanceof Deposit d && watched.contains(d.amount())) {
                latch.countDown();
            }
            return result;
        });
        return latch;
    }

    @Test
    void aRebuildThatCannotReadTheStoreFailsItsCommandAndTheNextCommandRebuildsFromWhatIsStored() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("reread"));
        ring.engine.failNextAppend();
        ring.send(new Deposit("reread", 5)).awaitFailure(); // its events are lost: rebuild next
        ring.engine.failNextRead();

        Throwable unreadable = ring.send(new Deposit("reread", 7)).awaitFailure();
        Object balance = ring.send(new Deposit("reread", 11)).awaitSuccess();

        assertThat(unreadable).hasMessageContaining(FaultyStorageEngine.INJECTED);
        assertThat(balance).isEqualTo(11L);
        assertThat(ring.storedSequenceNumbers("reread")).containsExactly(0L, 1L);
    }

    @Test
    void aFailedCommandWhoseAggregateCannotBeReadBackKeepsTheEarlierCommandsStillOnTheirWayToTheStore()
            throws InterruptedException {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("inflight"));
        CountDownLatch afterDepositHandled = handledLatch(1, 7L);
        HeldAppend held = ring.engine.holdNextAppend();
        Outcome earlier = ring.send(new Deposit("inflight", 5));
        held.awaitStarted(); // deposit 5 is in the store's append, not yet stored
        ring.engine.failNextRead();
        Outcome failing = ring.send(new DepositThenFail("inflight", 1000)); // its restore cannot read the store

        Outcome after = ring.send(new Deposit("inflight", 7));
        assertThat(afterDepositHandled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(earlier.awaitSuccess()).isEqualTo(5L);
        assertThat(failing.awaitFailure()).hasMessageContaining("fails on purpose");
        assertThat(after.awaitSuccess()).as("deposit 7 built on deposit 5, as on SimpleCommandBus").isEqualTo(12L);
        assertThat(ring.storedPayloads("inflight")).containsExactly(
                new Opened("inflight"), new Deposited("inflight", 5), new Deposited("inflight", 7));
        assertThat(ring.storedSequenceNumbers("inflight")).containsExactly(0L, 1L, 2L);
    }

    @Test
    void whileAFailedCommandsAggregateStillCannotBeReadTheNextCommandFailsAndTheOneAfterBuildsOnEverythingHandled()
            throws InterruptedException {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("unreadable"));
        CountDownLatch lastHandled = handledLatch(1, 9L);
        HeldAppend held = ring.engine.holdNextAppend();
        Outcome earlier = ring.send(new Deposit("unreadable", 5));
        held.awaitStarted();
        ring.engine.failNextRead(); // the failed command's restore
        ring.engine.failNextRead(); // the next command's read before it runs
        Outcome failing = ring.send(new DepositThenFail("unreadable", 1000));

        Outcome unreadable = ring.send(new Deposit("unreadable", 7));
        Outcome last = ring.send(new Deposit("unreadable", 9));
        assertThat(lastHandled.await(10, TimeUnit.SECONDS)).isTrue();
        held.release();

        assertThat(earlier.awaitSuccess()).isEqualTo(5L);
        assertThat(failing.awaitFailure()).hasMessageContaining("fails on purpose");
        assertThat(unreadable.awaitFailure()).hasMessageContaining(FaultyStorageEngine.INJECTED)
                                             .hasMessageContaining("reading aggregate unreadable");
        assertThat(last.awaitSuccess()).isEqualTo(14L);
        assertThat(ring.storedPayloads("unreadable")).containsExactly(
                new Opened("unreadable"), new Deposited("unreadable", 5), new Deposited("unreadable", 9));
        assertThat(ring.storedSequenceNumbers("unreadable")).containsExactly(0L, 1L, 2L);
    }
}
