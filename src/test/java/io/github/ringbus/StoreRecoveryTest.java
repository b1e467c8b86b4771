package io.github.ringbus;

import io.github.ringbus.StoreAttempt.End;
import io.github.ringbus.StoreRecovery.Next;
import io.grpc.Metadata;
import io.grpc.Status;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.junit.jupiter.api.Test;

import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The store stage's recovery policy, row by row: what becomes of a group of commands whose attempt to be stored
 * failed, by where it failed and what the failure says of the store.
 */
class StoreRecoveryTest {

    private static final EmbeddedEventStore STORE =
            EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();

    private final CommandSlot first = new CommandSlot(STORE);
    private final CommandSlot second = new CommandSlot(STORE);
    private final CommandSlot third = new CommandSlot(STORE);
    private final List<CommandSlot> three = List.of(first, second, third);

    /** A value the database refused, of some command: neither a connection failure nor a rollback of the whole. */
    private static final SQLException BAD_VALUE = new SQLException("value too long for type", "22001");
    private static final SQLException CONNECTION_LOST = new SQLTransientConnectionException("connection lost", "08006");
    private static final SQLException SERIALIZATION_FAILURE = new SQLException("could not serialize", "40001");

    @Test
    void aFailedAppendOfSeveralCommandsIsHalved() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.APPEND_FAILED, BAD_VALUE), three)).isEqualTo(Next.HALVE);
    }

    @Test
    void aFailedAppendOfOneCommandFailsItAlone() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.APPEND_FAILED, BAD_VALUE), List.of(first)))
                .isEqualTo(Next.FAIL_ALONE);
    }

    @Test
    void oneCommandRefusedBecauseAnotherWriterAppendedFirstIsHandledAgainOnTheStoredAggregate() {
        Throwable conflict = new EventStoreException("append failed", axonServerError(Status.OUT_OF_RANGE,
                                                                                       "AXONIQ-2000"));

        assertThat(StoreRecovery.next(StoreAttempt.failed(End.APPEND_FAILED, conflict), List.of(first)))
                .isEqualTo(Next.HANDLE_AGAIN_ON_STORED);
    }

    @Test
    void severalCommandsRefusedForAnotherWritersAppendAreHalvedFirst() {
        Throwable conflict = axonServerError(Status.OUT_OF_RANGE, "AXONIQ-2000");

        assertThat(StoreRecovery.next(StoreAttempt.failed(End.APPEND_FAILED, conflict), three))
                .isEqualTo(Next.HALVE);
    }

    @Test
    void anAppendThatCannotReachTheStoreFailsEveryCommandNotYetCommitted() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.APPEND_FAILED, CONNECTION_LOST), three))
                .isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void aTransactionThatCannotBeginFailsEveryCommandNotYetCommittedWhateverTheFailure() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.BEGIN_FAILED, BAD_VALUE), List.of(first)))
                .isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void aCommitThatFailedWithoutARollbackFailsItsGroupWithTheOutcomeUnknown() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.COMMIT_FAILED, new SQLException("I/O error")), three))
                .isEqualTo(Next.FAIL_OUTCOME_UNKNOWN);
    }

    @Test
    void aCommitThatLostTheConnectionFailsItsGroupWithTheOutcomeUnknownAndThenEveryOther() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.COMMIT_FAILED, CONNECTION_LOST), three))
                .isEqualTo(Next.FAIL_OUTCOME_UNKNOWN_THEN_ALL);
    }

    @Test
    void aCommitTheDatabaseRolledBackIsIsolatedAsAFailedAppendIs() {
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.COMMIT_FAILED, SERIALIZATION_FAILURE), three))
                .isEqualTo(Next.HALVE);
        assertThat(StoreRecovery.next(StoreAttempt.failed(End.COMMIT_FAILED, SERIALIZATION_FAILURE),
                                      List.of(first))).isEqualTo(Next.FAIL_ALONE);
    }

    @Test
    void aSubscribersRefusalOfTheFirstCommandFailsThatCommand() {
        assertThat(StoreRecovery.next(StoreAttempt.refusedBySubscriber(first, new IllegalStateException("no")),
                                      three)).isEqualTo(Next.FAIL_CULPRIT);
    }

    @Test
    void aSubscribersRefusalOfALaterCommandDecidesTheCommandsBeforeItFirst() {
        assertThat(StoreRecovery.next(StoreAttempt.refusedBySubscriber(third, new IllegalStateException("no")),
                                      three)).isEqualTo(Next.SPLIT_AT_CULPRIT);
    }

    @Test
    void aSubscriberThatCannotReachTheStoreFailsEveryCommandNotYetCommitted() {
        assertThat(StoreRecovery.next(StoreAttempt.refusedBySubscriber(second, CONNECTION_LOST), three))
                .isEqualTo(Next.FAIL_ALL);
    }

    @Test
    void aStoredGroupHasNothingToRecoverFrom() {
        assertThatThrownBy(() -> StoreRecovery.next(StoreAttempt.STORED, three))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("stored");
    }

    @Test
    void aCulpritOutsideItsGroupIsABug() {
        assertThatThrownBy(() -> StoreRecovery.next(
                StoreAttempt.refusedBySubscriber(new CommandSlot(STORE), BAD_VALUE), three))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not of the group");
    }

    private static RuntimeException axonServerError(Status status, String code) {
        Metadata trailers = new Metadata();
        trailers.put(Metadata.Key.of("AxonIQ-ErrorCode", Metadata.ASCII_STRING_MARSHALLER), code);
        return status.withDescription("refused by the server").asRuntimeException(trailers);
    }
}
