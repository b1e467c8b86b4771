package io.github.ringbus;

import io.github.ringbus.StoreAttempt.End;
import io.github.ringbus.StoreRecovery.Next;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.grpc.Metadata;
import io.grpc.Status;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.axonframework.modelling.command.ConcurrencyException;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.junit.jupiter.api.Test;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The recovery policy of refused appends ({@link IsolatingStoreRecovery}), row by row, the whole of its specification: what becomes of a group of commands whose attempt to be stored
 * failed, by where it failed and what the failure says of the store; and which commands are handled again.
 */
class StoreRecoveryTest {

    private static final EmbeddedEventStore STORE =
            EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();

    private static final StoreRecovery POLICY = new IsolatingStoreRecovery(true);

    private final CommandSlot first = new CommandSlot(STORE);
    private final CommandSlot second = new CommandSlot(STORE);
    private final CommandSlot third = new CommandSlot(STORE);
    private final List<CommandSlot> three = List.of(first, second, third);

    /** A value the database refused, of some command: neither a connection failure nor a rollback of the whole. */
    private static final SQLException BAD_VALUE = new SQLException("value too long for type", "22001");
    private static final SQLException CONNECTION_LOST = new SQLTransientConnectionException("connection lost", "08006");
    private static final SQLException SERIALIZATION_FAILURE = new SQLException("could not serialize", "40001");
    private static final SQLException DEADLOCK = new SQLException("deadlock detected", "40P01");
    /** A deferred foreign key checked at the commit: the database rolled back, and it would refuse again. */
    private static final SQLException DEFERRED_CONSTRAINT = new SQLException("violates foreign key", "23503");

    @Test
    void aFailedAppendOfSeveralCommandsIsHalved() {
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, BAD_VALUE), three)).isEqualTo(Next.HALVE);
    }

    @Test
    void aFailedAppendOfOneCommandFailsItAlone() {
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, BAD_VALUE), List.of(first)))
                .isEqualTo(Next.FAIL_ALONE);
    }

    @Test
    void oneCommandRefusedBecauseAnotherWriterAppendedFirstIsHandledAgainOnTheStoredAggregate() {
        Throwable conflict = new EventStoreException("append failed", axonServerError(Status.OUT_OF_RANGE,
                                                                                       "AXONIQ-2000"));

        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, conflict), List.of(first)))
                .isEqualTo(Next.HANDLE_AGAIN_ON_STORED);
    }

    @Test
    void oneCommandRefusedByTheUniqueKeyOfAJdbcOrJpaStoreIsHandledAgainOnTheStoredAggregate() {
        // What Axon's JDBC and JPA engines throw when another replica appended the sequence number first.
        Throwable conflict = new ConcurrencyException(
                "An event for aggregate [a] at sequence [3] was already inserted",
                new SQLException("duplicate key value violates unique constraint", "23505"));

        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, conflict), List.of(first)))
                .isEqualTo(Next.HANDLE_AGAIN_ON_STORED);
    }

    @Test
    void aUniqueKeyConflictFoundAtCommitIsHandledAgainOnTheStoredAggregate() {
        // JPA flushes at commit when it does not flush at append: the conflict comes from commit(), rolled back.
        Throwable conflict = new RuntimeException("commit failed", new ConcurrencyException(
                "already inserted", new SQLException("duplicate key", "23505")));

        assertThat(next(POLICY, StoreAttempt.failed(End.COMMIT_FAILED, conflict), List.of(first)))
                .isEqualTo(Next.HANDLE_AGAIN_ON_STORED);
    }

    @Test
    void aSecondCreationOfOneAggregateIsNoConflictToHandleAgain() {
        Throwable duplicateCreation = new AggregateStreamCreationException(
                "Cannot reuse aggregate identifier [a]", new SQLException("duplicate key", "23505"));

        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, duplicateCreation), List.of(first)))
                .isEqualTo(Next.FAIL_ALONE);
    }

    @Test
    void severalCommandsRefusedForAnotherWritersAppendAreHalvedFirst() {
        Throwable conflict = axonServerError(Status.OUT_OF_RANGE, "AXONIQ-2000");

        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, conflict), three))
                .isEqualTo(Next.HALVE);
    }

    @Test
    void anAppendThatCannotReachTheStoreFailsEveryCommandNotYetCommitted() {
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, CONNECTION_LOST), three))
                .isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void aTransactionThatCannotBeginFailsEveryCommandNotYetCommittedWhateverTheFailure() {
        assertThat(next(POLICY, StoreAttempt.failed(End.BEGIN_FAILED, BAD_VALUE), List.of(first)))
                .isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void aCommitThatFailedWithoutARollbackFailsItsGroupWithTheOutcomeUnknown() {
        assertThat(next(POLICY, StoreAttempt.failed(End.COMMIT_FAILED, new SQLException("I/O error")), three))
                .isEqualTo(Next.FAIL_OUTCOME_UNKNOWN);
    }

    @Test
    void aCommitThatLostTheConnectionFailsItsGroupWithTheOutcomeUnknownAndThenEveryOther() {
        assertThat(next(POLICY, StoreAttempt.failed(End.COMMIT_FAILED, CONNECTION_LOST), three))
                .isEqualTo(Next.FAIL_OUTCOME_UNKNOWN_THEN_ALL);
    }

    @Test
    void aCommitTheDatabaseRolledBackIsIsolatedAsAFailedAppendIs() {
        assertThat(next(POLICY, StoreAttempt.failed(End.COMMIT_FAILED, DEFERRED_CONSTRAINT), three))
                .isEqualTo(Next.HALVE);
        assertThat(next(POLICY, StoreAttempt.failed(End.COMMIT_FAILED, DEFERRED_CONSTRAINT),
                                      List.of(first))).isEqualTo(Next.FAIL_ALONE);
    }

    @Test
    void aDeadlockInTheAppendTriesTheSameGroupAgainAfterAPause() {
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, DEADLOCK), three))
                .isEqualTo(Next.TRY_AGAIN_AFTER_PAUSE);
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, DEADLOCK), List.of(first)))
                .isEqualTo(Next.TRY_AGAIN_AFTER_PAUSE);
    }

    @Test
    void aSerializationFailureAtTheCommitTriesTheSameGroupAgainAfterAPause() {
        assertThat(next(POLICY, StoreAttempt.failed(End.COMMIT_FAILED, SERIALIZATION_FAILURE), three))
                .isEqualTo(Next.TRY_AGAIN_AFTER_PAUSE);
    }

    @Test
    void aSubscriberWhoseWriteMetADeadlockHasItsGroupTriedAgainRatherThanFailed() {
        assertThat(next(POLICY, StoreAttempt.refusedBySubscriber(second, DEADLOCK), three))
                .isEqualTo(Next.TRY_AGAIN_AFTER_PAUSE);
    }

    @Test
    void afterThreeTriesAGroupRefusedForAConflictBetweenTransactionsIsRecoveredAsAnyOther() {
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, DEADLOCK), three, 2))
                .isEqualTo(Next.TRY_AGAIN_AFTER_PAUSE);
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, DEADLOCK), three, 3)).isEqualTo(Next.HALVE);
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, DEADLOCK), List.of(first), 3))
                .isEqualTo(Next.FAIL_ALONE);
        assertThat(next(POLICY, StoreAttempt.refusedBySubscriber(second, DEADLOCK), three, 3))
                .isEqualTo(Next.SPLIT_AT_CULPRIT);
    }

    @Test
    void aConnectionLostIsNotTriedAgainAfterAPauseEvenInADeadlocksCompany() {
        SQLException both = new SQLException("deadlock detected", "40P01");
        both.setNextException(CONNECTION_LOST);
        assertThat(next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, both), three)).isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void thePausesBeforeTryingAgainAre1And4And16Milliseconds() {
        assertThat(POLICY.pauseBeforeTryingAgain(0)).isEqualTo(1_000_000L);
        assertThat(POLICY.pauseBeforeTryingAgain(1)).isEqualTo(4_000_000L);
        assertThat(POLICY.pauseBeforeTryingAgain(2)).isEqualTo(16_000_000L);
    }

    @Test
    void aNegativeCountOfTriesIsRefusedByName() {
        assertThatThrownBy(() -> next(POLICY, StoreAttempt.failed(End.APPEND_FAILED, DEADLOCK), three, -1))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1 times");
    }

    @Test
    void aSubscribersRefusalOfTheFirstCommandFailsThatCommand() {
        assertThat(next(POLICY, StoreAttempt.refusedBySubscriber(first, new IllegalStateException("no")),
                                      three)).isEqualTo(Next.FAIL_CULPRIT);
    }

    @Test
    void aSubscribersRefusalOfALaterCommandDecidesTheCommandsBeforeItFirst() {
        assertThat(next(POLICY, StoreAttempt.refusedBySubscriber(third, new IllegalStateException("no")),
                                      three)).isEqualTo(Next.SPLIT_AT_CULPRIT);
    }

    @Test
    void aSubscriberThatCannotReachTheStoreFailsEveryCommandNotYetCommitted() {
        assertThat(next(POLICY, StoreAttempt.refusedBySubscriber(second, CONNECTION_LOST), three))
                .isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void aStoredGroupHasNothingToRecoverFrom() {
        assertThatThrownBy(() -> next(POLICY, StoreAttempt.STORED, three))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stored");
    }

    @Test
    void aCulpritOutsideItsGroupIsABug() {
        assertThatThrownBy(() -> next(POLICY, 
                StoreAttempt.refusedBySubscriber(new CommandSlot(STORE), BAD_VALUE), three))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not of the group");
    }

    @Test
    void aCommandBuiltOnARefusedStateRunsAgainWhenNothingOfItsRunReachedBeyondItsEvents() {
        assertThat(POLICY.mayRunAgain(StoreRecovery.Command.of(first))).isTrue();
    }

    @Test
    void noCommandRunsAgainWhereThePlanAllowsNoReRuns() {
        assertThat(new IsolatingStoreRecovery(false).mayRunAgain(StoreRecovery.Command.of(first))).isFalse();
    }

    @Test
    void aCommandThatRanWholeNeverRunsAgain() {
        first.runsWhole = true;

        assertThat(POLICY.mayRunAgain(StoreRecovery.Command.of(first))).isFalse();
    }

    @Test
    void aCommandRunAgainTheMostTimesRunsNoMore() {
        for (int run = 1; run < IsolatingStoreRecovery.MOST_RE_RUNS; run++) {
            first.prepareReRun(new IllegalStateException("refused"));
        }
        assertThat(POLICY.mayRunAgain(StoreRecovery.Command.of(first))).isTrue();

        first.prepareReRun(new IllegalStateException("refused"));

        assertThat(POLICY.mayRunAgain(StoreRecovery.Command.of(first))).isFalse();
    }

    @Test
    void aCommandWhoseUnitOfWorkIsMarkedRunOnceNeverRunsAgain() {
        first.unitOfWork.resources().put(RunOnce.RESOURCE, true);

        assertThat(POLICY.mayRunAgain(StoreRecovery.Command.of(first))).isFalse();
    }

    @Test
    void aCommandRefusedForAnotherWritersAppendIsHandledAgainOnTheStoredAggregate() {
        first.holder = holderOf("a");
        first.events.add(new GenericDomainEventMessage<>("Account", "a", 3, new Deposited("a", 10)));

        assertThat(POLICY.mayHandleAgainOnStored(StoreRecovery.Command.of(first))).isTrue();
    }

    @Test
    void aCreationRefusedForAnotherWritersAppendIsNotHandledAgain() {
        first.holder = holderOf("a");
        first.events.add(new GenericDomainEventMessage<>("Account", "a", 0, new Opened("a")));

        assertThat(POLICY.mayHandleAgainOnStored(StoreRecovery.Command.of(first))).isFalse();
    }

    /**
     * A command that creates another aggregate as well (createNew, or a creation sent on an injected
     * {@code SimpleCommandBus}) that already exists: the unique key refuses its own second creation, not another
     * writer's append; handled again it would be refused again, up to the re-run limit.
     */
    @Test
    void aCommandWhoseEventsCreateAnotherAggregateIsNotHandledAgain() {
        first.holder = holderOf("a");
        first.events.add(new GenericDomainEventMessage<>("Account", "a", 3, new Deposited("a", 10)));
        first.events.add(new GenericDomainEventMessage<>("Account", "b", 0, new Opened("b")));

        assertThat(POLICY.mayHandleAgainOnStored(StoreRecovery.Command.of(first))).isFalse();
    }

    @Test
    void aCommandOnNoAggregateIsNotHandledAgainOnAStoredOne() {
        assertThat(POLICY.mayHandleAgainOnStored(StoreRecovery.Command.of(first))).isFalse();
    }

    @Test
    void aCommandRefusedForAnotherWritersAppendIsNotHandledAgainWhereThePlanAllowsNoReRuns() {
        first.holder = holderOf("a");
        first.events.add(new GenericDomainEventMessage<>("Account", "a", 3, new Deposited("a", 10)));

        assertThat(new IsolatingStoreRecovery(false).mayHandleAgainOnStored(StoreRecovery.Command.of(first))).isFalse();
    }

    private static AggregateHolder<Account> holderOf(String identifier) {
        AggregateModel<Account> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(Account.class);
        RingRepository<Account> repository = new RingRepository<>(
                model, new GenericAggregateFactory<>(model), STORE, null, NoSnapshotTriggerDefinition.INSTANCE, 10,
                () -> Long.MAX_VALUE, new AnnotatedTargetResolver());
        return new AggregateHolder<>(repository, identifier);
    }

    private static RuntimeException axonServerError(Status status, String code) {
        Metadata trailers = new Metadata();
        trailers.put(Metadata.Key.of("AxonIQ-ErrorCode", Metadata.ASCII_STRING_MARSHALLER), code);
        return status.withDescription("refused by the server").asRuntimeException(trailers);
    }

    /** The policy's decision for a group of slots: their number and where the culprit is, as the store asks it. */
    private static Next next(StoreRecovery policy, StoreAttempt attempt, List<CommandSlot> group) {
        return next(policy, attempt, group, 0);
    }

    private static Next next(StoreRecovery policy, StoreAttempt attempt, List<CommandSlot> group, int triedAgain) {
        return policy.next(attempt, group.size(), attempt.culprit == null ? -1 : group.indexOf(attempt.culprit),
                           triedAgain);
    }
}
