package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Creation commands on a storage engine with Axon's unique key on (aggregate, sequence number): the preload reads
 * nothing for them, as Axon's own repositories, and the key refuses a second creation of an aggregate that is not in
 * memory.
 */
class PostgresCreationTest extends OnPostgres {

    @Test
    void aCreationCommandReadsNothingFromTheEventStore() {
        try (PostgresRing ring = new PostgresRing(server)) {
            for (int i = 0; i < 50; i++) {
                CommandResultMessage<Object> result = ring.sendAndWait(new Open("created-" + i));
                assertThat(result.isExceptional()).as("%s", result.optionalExceptionResult()).isFalse();
            }

            assertThat(ring.engine.aggregateReads()).isZero();
            assertThat(PostgresRing.readFresh(server, "created-49"))
                    .<Object>extracting(DomainEventMessage::getPayload).containsExactly(new Opened("created-49"));
        }
    }

    @Test
    void creatingAnAggregateThatIsStoredButNotInMemoryFailsAtTheAppendAndLeavesTheOriginalUnchanged() {
        try (PostgresRing first = new PostgresRing(server)) {
            first.sendAndWait(new Open("existing"));
            first.sendAndWait(new Deposit("existing", 7));
        }

        try (PostgresRing second = new PostgresRing(server)) {
            CommandResultMessage<Object> again = second.sendAndWait(new Open("existing"));

            assertThat(again.isExceptional()).isTrue();
            assertThat(again.exceptionResult()).isInstanceOf(AggregateStreamCreationException.class)
                                               .hasMessageContaining("existing");
            CommandResultMessage<Object> deposit = second.sendAndWait(new Deposit("existing", 1));
            assertThat(deposit.isExceptional()).as("%s", deposit.optionalExceptionResult()).isFalse();
            assertThat(deposit.getPayload()).isEqualTo(8L);
        }
        assertThat(PostgresRing.readFresh(server, "existing"))
                .<Object>extracting(DomainEventMessage::getPayload)
                .containsExactly(new Opened("existing"), new Deposited("existing", 7), new Deposited("existing", 1));
    }

    @Test
    void aFailedSecondCreationFailsOnlyItselfAmongTheCommandsOfItsBatch() throws Exception {
        try (PostgresRing first = new PostgresRing(server)) {
            first.sendAndWait(new Open("taken"));
        }

        try (PostgresRing second = new PostgresRing(server)) {
            var others = new java.util.ArrayList<java.util.concurrent.CompletableFuture<CommandResultMessage<Object>>>();
            for (int i = 0; i < 20; i++) {
                others.add(second.send(new Open("batch-" + i)));
            }
            var duplicate = second.send(new Open("taken"));
            for (int i = 20; i < 40; i++) {
                others.add(second.send(new Open("batch-" + i)));
            }

            assertThat(duplicate.get(30, java.util.concurrent.TimeUnit.SECONDS).isExceptional()).isTrue();
            for (var other : others) {
                CommandResultMessage<Object> result = other.get(30, java.util.concurrent.TimeUnit.SECONDS);
                assertThat(result.isExceptional()).as("%s", result.optionalExceptionResult()).isFalse();
            }
        }
        assertThat(PostgresRing.readFresh(server, "taken")).hasSize(1);
        assertThat(PostgresRing.readFresh(server, "batch-39")).hasSize(1);
    }
}
