package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.eventsourcing.eventstore.DomainEventStream;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * On Axon's in-memory engine a creation command reads nothing (that engine reads an aggregate by scanning every
 * event it holds), as on Axon's own buses; a second creation of an aggregate in memory is still refused.
 */
class CreationOnInMemoryEngineTest {

    /** Axon's in-memory engine, counting aggregate reads. */
    static final class CountingEngine extends InMemoryEventStorageEngine {
        final AtomicInteger reads = new AtomicInteger();

        @Override
        public DomainEventStream readEvents(String aggregateIdentifier, long firstSequenceNumber) {
            reads.incrementAndGet();
            return super.readEvents(aggregateIdentifier, firstSequenceNumber);
        }
    }

    private final CountingEngine engine = new CountingEngine();
    private RingCommandBus bus;

    private CommandResultMessage<?> sendAndWait(Object command) {
        if (bus == null) {
            bus = RingCommandBus.builder().eventStore(RingEventStore.builder().storageEngine(engine).build()).build();
            bus.registerAggregate(Account.class);
            bus.start();
        }
        FutureCallback<Object, Object> result = new FutureCallback<>();
        bus.dispatch(asCommandMessage(command), result);
        return result.getResult();
    }

    @AfterEach
    void shutdown() {
        if (bus != null) {
            bus.shutdown();
        }
    }

    @Test
    void creationCommandsReadNothingFromAxonsInMemoryEngine() {
        for (int i = 0; i < 100; i++) {
            assertThat(sendAndWait(new Open("created-" + i)).isExceptional()).isFalse();
        }

        assertThat(engine.reads.get()).isZero();
        assertThat(sendAndWait(new Deposit("created-7", 5)).getPayload()).isEqualTo(5L);
    }

    @Test
    void creatingAnAggregateThatIsInMemoryIsStillRefused() {
        sendAndWait(new Open("twice"));

        CommandResultMessage<?> again = sendAndWait(new Open("twice"));

        assertThat(again.isExceptional()).isTrue();
        assertThat(again.exceptionResult()).isInstanceOf(AggregateStreamCreationException.class)
                                           .hasMessageContaining("[twice]");
    }
}
