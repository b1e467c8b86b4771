package io.github.ringbus;

import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.SocketException;
import java.sql.SQLException;

import static org.assertj.core.api.Assertions.assertThat;

/** What a caller is told of a store failure: its own command and aggregate, and the store's real cause. */
class StoreFailureNoticeTest {

    private static final EmbeddedEventStore STORE =
            EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();

    /** Axon's JDBC engine's wrapping of a lost connection: named after the batch's first event, "already inserted". */
    private static final EventStoreException LOST_CONNECTION = new EventStoreException(
            "An event for aggregate [someone-else] at sequence [100] was already inserted",
            new SQLException("An I/O error occurred while sending to the backend.", "08006",
                             new SocketException("Broken pipe")));

    @Test
    void anUnreachableStoreIsReportedWithTheCallersOwnAggregateAndTheDriversErrorNotAsADuplicate() {
        Throwable told = StoreFailureNotice.unreachable(commandOn("mine"), LOST_CONNECTION);

        assertThat(told).isInstanceOf(EventStoreException.class)
                        .hasMessageContaining("Command [deposit] on aggregate [mine] failed")
                        .hasMessageContaining("SQLException [SQLState 08006]: An I/O error occurred")
                        .hasMessageContaining("(SocketException: Broken pipe)")
                        .hasMessageNotContaining("someone-else")
                        .hasMessageNotContaining("already inserted")
                        .hasCause(LOST_CONNECTION);
    }

    @Test
    void aRefusedAppendOfAxonsEngineIsToldWithItsRealCause() {
        EventStoreException tooLong = new EventStoreException(
                "An event for aggregate [mine] at sequence [3] was already inserted",
                new SQLException("value too long for type character varying(8)", "22001"));

        assertThat(StoreFailureNotice.refused(commandOn("mine"), tooLong))
                .isInstanceOf(EventStoreException.class)
                .hasMessageContaining("on aggregate [mine] failed: the event store refused its events")
                .hasMessageContaining("[SQLState 22001]: value too long")
                .hasMessageNotContaining("already inserted");
    }

    @Test
    void aRefusalThatIsNotAxonsWrappingIsPassedOnAsItIs() {
        IllegalArgumentException engines = new IllegalArgumentException("the engine's own words");

        assertThat(StoreFailureNotice.refused(commandOn("mine"), engines)).isSameAs(engines);
    }

    @Test
    void anUnknownOutcomeNamesTheCommandsAggregateAndHowManyShareItsTransaction() {
        CommitOutcomeUnknownException told =
                StoreFailureNotice.outcomeUnknown(commandOn("mine"), 4, new IOException("connection reset"));

        assertThat(told).hasMessageContaining("command [deposit] on aggregate [mine] (with 3 other command(s)")
                        .hasMessageContaining("IOException: connection reset");
    }

    @Test
    void aCommandWithoutATargetIsNamedByTheAggregateOfItsFirstEvent() {
        CommandSlot slot = new CommandSlot(STORE);
        slot.command = GenericCommandMessage.asCommandMessage("create").andMetaData(java.util.Map.of());
        slot.events.add(new GenericDomainEventMessage<>("Account", "created-here", 0, "created"));

        assertThat(StoreFailureNotice.aggregateOf(slot)).isEqualTo("created-here");
    }

    private static CommandSlot commandOn(String aggregate) {
        CommandSlot slot = new CommandSlot(STORE);
        slot.command = new GenericCommandMessage<>(GenericCommandMessage.asCommandMessage("payload"), "deposit");
        slot.events.add(new GenericDomainEventMessage<>("Account", aggregate, 3, "deposited"));
        return slot;
    }
}
