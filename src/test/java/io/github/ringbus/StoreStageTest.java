package io.github.ringbus;

import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The store stage on its own, without a ring: given the slots of one batch, which commands it stores, in how many
 * append calls, and which it fails. Every append call of the engine either stores all its events or none.
 */
class StoreStageTest {

    private final FaultyStorageEngine engine = new FaultyStorageEngine();
    private final RingEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
    private final StoreStage stage = new StoreStage(eventStore, eventStore, NoTransactionManager.INSTANCE, 1024,
                                                    PipelineMonitor.NONE, true, new LeftInterrupts(),
                                                    new IsolatingStoreRecovery(false), new ReRuns(1), null, 0,
                              new StoreOutage(NoTransactionManager.INSTANCE,
                                              new FailFastReads(NoTransactionManager.INSTANCE), "probe"), null);
    private long sequence;

    @AfterEach
    void shutdown() {
        eventStore.shutDown();
    }

    /** A handled command whose one event is {@code payload}, as the handle stage leaves its slot. */
    private CommandSlot handled(String payload) {
        CommandSlot slot = new CommandSlot(eventStore);
        slot.command = GenericCommandMessage.asCommandMessage(payload);
        slot.events.add(new GenericDomainEventMessage<>("Account", payload, 0, payload));
        return slot;
    }

    /** Hands the slots to the stage as one Disruptor batch. */
    private void storeAsOneBatch(List<CommandSlot> slots) {
        for (int i = 0; i < slots.size(); i++) {
            stage.onEvent(slots.get(i), sequence++, i == slots.size() - 1);
        }
    }

    private List<CommandSlot> batch(String... payloads) {
        List<CommandSlot> slots = new ArrayList<>();
        for (String payload : payloads) {
            slots.add(handled(payload));
        }
        return slots;
    }

    @Test
    void aBatchThatTheStoreTakesIsAppendedInOneCall() {
        List<CommandSlot> slots = batch("a", "b", "c", "d");

        storeAsOneBatch(slots);

        assertThat(engine.storedAppends()).containsExactly(List.of("a", "b", "c", "d"));
        assertThat(slots).allMatch(slot -> slot.storeFailure == null);
    }

    @Test
    void aRefusedValueFailsOnlyItsOwnCommandAndTheRestIsStoredByHalving() {
        engine.refuseDataOf("c");
        List<CommandSlot> slots = batch("a", "b", "c", "d");

        storeAsOneBatch(slots);

        assertThat(slots.get(2).storeFailure).isInstanceOf(EventStoreException.class)
                                             .hasMessageContaining("value too long")
                                             .cause().hasMessageContaining("data refused: c");
        assertThat(List.of(slots.get(0), slots.get(1), slots.get(3))).allMatch(slot -> slot.storeFailure == null);
        // [a b c d] refused; [a b] stored; [c d] refused; [c] refused; [d] stored.
        assertThat(engine.storedAppends()).containsExactly(List.of("a", "b"), List.of("d"));
    }

    @Test
    void anyRefusedValueFailsOnlyTheCommandsWhoseEventsCarryIt() {
        engine.refuse("b");
        engine.refuse("g");
        List<CommandSlot> slots = batch("a", "b", "c", "d", "e", "f", "g", "h");

        storeAsOneBatch(slots);

        List<String> failed = new ArrayList<>();
        for (CommandSlot slot : slots) {
            if (slot.storeFailure != null) {
                failed.add((String) slot.command.getPayload());
            }
        }
        assertThat(failed).containsExactly("b", "g");
        assertThat(engine.storedAppends().stream().flatMap(List::stream)).containsExactly("a", "c", "d", "e", "f",
                                                                                           "h");
    }

    @Test
    void aStoreThatCannotBeReachedFailsTheWholeBatchWithoutRetrying() {
        engine.failNextAppendUnreachable();
        List<CommandSlot> slots = batch("a", "b", "c", "d");

        storeAsOneBatch(slots);

        assertThat(slots).allMatch(slot -> slot.storeFailure != null);
        assertThat(engine.storedAppends()).isEmpty();
    }

    @Test
    void aFailedBatchLeavesTheNextBatchUntouched() {
        engine.failNextAppend();
        engine.refuseDataOf("b");
        storeAsOneBatch(batch("a", "b"));

        List<CommandSlot> next = batch("c", "d");
        storeAsOneBatch(next);

        assertThat(next).allMatch(slot -> slot.storeFailure == null);
        assertThat(engine.storedAppends()).containsExactly(List.of("a"), List.of("c", "d"));
    }

    /** Transactions whose first commit throws {@code failure} after the engine's appends went through. */
    private static final class FirstCommitThrows implements TransactionManager {

        final AtomicInteger started = new AtomicInteger();
        private final RuntimeException failure;

        FirstCommitThrows(RuntimeException failure) {
            this.failure = failure;
        }

        @Override
        public Transaction startTransaction() {
            int number = started.incrementAndGet();
            return new Transaction() {
                @Override
                public void commit() {
                    if (number == 1) {
                        throw failure;
                    }
                }

                @Override
                public void rollback() {
                }
            };
        }
    }

    private StoreStage stageWith(TransactionManager transactions) {
        return new StoreStage(eventStore, eventStore, transactions, 1024, PipelineMonitor.NONE, true,
                              new LeftInterrupts(), new IsolatingStoreRecovery(false), new ReRuns(1), null, 0,
                              new StoreOutage(transactions, new FailFastReads(NoTransactionManager.INSTANCE), "probe"),
                              null);
    }

    @Test
    void aCommitThatFailsWithoutSayingItRolledBackFailsItsCommandsAsOutcomeUnknownAndIsNeverAppendedAgain() {
        FirstCommitThrows transactions = new FirstCommitThrows(new IllegalStateException("after-commit hook failed"));
        StoreStage stage = stageWith(transactions);
        List<CommandSlot> slots = batch("a", "b", "c", "d");

        for (int i = 0; i < slots.size(); i++) {
            stage.onEvent(slots.get(i), i, i == slots.size() - 1);
        }

        assertThat(slots).allMatch(slot -> slot.storeFailure instanceof CommitOutcomeUnknownException);
        assertThat(transactions.started).hasValue(1);
        assertThat(engine.storedAppends()).containsExactly(List.of("a", "b", "c", "d"));
    }

    @Test
    void aCommitTheDatabaseRolledBackIsTriedAgainApartLikeAFailedAppend() {
        RuntimeException deferredConstraint = new IllegalStateException(
                "commit failed", new SQLException("violates foreign key constraint", "23503"));
        FirstCommitThrows transactions = new FirstCommitThrows(deferredConstraint);
        StoreStage stage = stageWith(transactions);
        List<CommandSlot> slots = batch("a", "b");

        for (int i = 0; i < slots.size(); i++) {
            stage.onEvent(slots.get(i), i, i == slots.size() - 1);
        }

        assertThat(transactions.started.get()).isGreaterThan(1);
        assertThat(slots).noneMatch(slot -> slot.storeFailure instanceof CommitOutcomeUnknownException);
    }

    // --- a conflict between transactions: the same group again, after a pause ---------------------------------------

    @Test
    void aBatchRefusedAsADeadlocksVictimIsStoredWholeWhenTriedAgain() {
        engine.failNextAppendsInADeadlock(2);
        List<CommandSlot> slots = batch("a", "b", "c", "d");

        storeAsOneBatch(slots);

        assertThat(engine.appendCalls()).isEqualTo(3);
        assertThat(engine.storedAppends()).containsExactly(List.of("a", "b", "c", "d"));
        assertThat(slots).allMatch(slot -> slot.storeFailure == null);
    }

    @Test
    void aBatchStillRefusedAfterThreeTriesAgainIsIsolatedAsAnyFailedAppend() {
        engine.failNextAppendsInADeadlock(1 + IsolatingStoreRecovery.MOST_TRIES_AFTER_PAUSE);
        List<CommandSlot> slots = batch("a", "b", "c", "d");

        storeAsOneBatch(slots);

        assertThat(engine.storedAppends()).containsExactly(List.of("a", "b"), List.of("c", "d"));
        assertThat(slots).allMatch(slot -> slot.storeFailure == null);
    }

    @Test
    void aCommandAloneStillRefusedAfterThreeTriesAgainFailsWithTheDatabasesRefusal() {
        engine.failNextAppendsInADeadlock(10);
        List<CommandSlot> slots = batch("a");

        storeAsOneBatch(slots);

        assertThat(engine.appendCalls()).isEqualTo(1 + IsolatingStoreRecovery.MOST_TRIES_AFTER_PAUSE);
        assertThat(engine.storedAppends()).isEmpty();
        assertThat(slots.get(0).storeFailure).isInstanceOf(EventStoreException.class)
                                             .hasStackTraceContaining("40P01");
    }

    @Test
    void theTriesAgainAfterAPauseAreCountedPerBatchNotPerGroup() {
        engine.failNextAppendsInADeadlock(3);
        storeAsOneBatch(batch("a", "b"));
        engine.failNextAppendsInADeadlock(3);
        List<CommandSlot> next = batch("c", "d");

        storeAsOneBatch(next);

        assertThat(engine.storedAppends()).containsExactly(List.of("a", "b"), List.of("c", "d"));
        assertThat(next).allMatch(slot -> slot.storeFailure == null);
    }

    // --- with the handler side: a stand-in serves the store thread's hand-backs ---------------------------------------

    /** The handler side's stand-in, for the tests that need it ({@link #accountOpenedOnTheBench}); else null. */
    private HandlerStandIn handlers;
    private StoreStage benchStage;

    @AfterEach
    void closeHandlers() throws InterruptedException {
        if (handlers != null) {
            handlers.close();
        }
    }

    /**
     * A stage whose policy lets commands run again, over this test's engine, with the handler side standing in, and
     * account "a" opened and stored through it.
     */
    private void accountOpenedOnTheBench() throws Exception {
        handlers = new HandlerStandIn(eventStore, engine, new IsolatingStoreRecovery(true));
        benchStage = new StoreStage(eventStore, eventStore, NoTransactionManager.INSTANCE, 1024, PipelineMonitor.NONE,
                                    true, new LeftInterrupts(), new IsolatingStoreRecovery(true), handlers.reRuns,
                                    null, 0, new StoreOutage(NoTransactionManager.INSTANCE,
                                                             new FailFastReads(NoTransactionManager.INSTANCE),
                                                             "probe"), null);
        onTheBenchAsOneBatch(List.of(handlers.handle("a", "open a", new Opened("a"))));
    }

    private void onTheBenchAsOneBatch(List<CommandSlot> slots) {
        for (int i = 0; i < slots.size(); i++) {
            benchStage.onEvent(slots.get(i), slots.get(i).sequence, i == slots.size() - 1);
        }
    }

    @Test
    void aCommandBuiltOnARefusedOneIsHandedBackToItsHandlerAndItsRunAgainIsStored() throws Exception {
        accountOpenedOnTheBench();
        engine.refuseDataOf(new Deposited("a", 1));
        CommandSlot refused = handlers.handle("a", "deposit 1", new Deposited("a", 1));
        CommandSlot builtOnIt = handlers.handle("a", "deposit 2", new Deposited("a", 2));
        handlers.onRunAgain((slot, next) -> List.of(new Deposited("a", 100 + next)));

        onTheBenchAsOneBatch(List.of(refused, builtOnIt));

        assertThat(handlers.failures).isEmpty();
        assertThat(refused.storeFailure).isInstanceOf(EventStoreException.class);
        assertThat(builtOnIt.storeFailure).isNull();
        assertThat(handlers.requestsFrom).containsExactly(builtOnIt.sequence);
        assertThat(engine.storedAppends()).containsExactly(List.of(new Opened("a")), List.of(new Deposited("a", 101)));
    }

    @Test
    void aCommandAnotherWriterGotAheadOfIsHandedBackAndRunAgainOnTheAggregateAsStored() throws Exception {
        accountOpenedOnTheBench();
        CommandSlot deposit = handlers.handle("a", "deposit", new Deposited("a", 1));
        engine.anotherWriterAppends(new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 50)));
        handlers.onRunAgain((slot, next) -> List.of(new Deposited("a", 100 + next)));

        onTheBenchAsOneBatch(List.of(deposit));

        assertThat(deposit.storeFailure).isNull();
        assertThat(handlers.requestsFrom).containsExactly(deposit.sequence);
        assertThat(engine.storedAppends()).containsExactly(List.of(new Opened("a")), List.of(new Deposited("a", 102)));
    }

    @Test
    void aCommandTheHandlerSideDeclinesToRunAgainFailsAsBuiltOnTheRefusedState() throws Exception {
        accountOpenedOnTheBench();
        engine.refuseDataOf(new Deposited("a", 1));
        CommandSlot refused = handlers.handle("a", "deposit 1", new Deposited("a", 1));
        CommandSlot builtOnIt = handlers.handle("a", "deposit 2", new Deposited("a", 2));
        handlers.declineRequests();

        onTheBenchAsOneBatch(List.of(refused, builtOnIt));

        assertThat(handlers.requestsFrom).containsExactly(builtOnIt.sequence);
        assertThat(builtOnIt.storeFailure).isInstanceOf(EventStoreException.class)
                                          .hasMessageContaining("failed to be stored");
        assertThat(engine.storedAppends()).containsExactly(List.of(new Opened("a")));
    }
}
