package io.github.ringbus.behaviour;

import io.github.ringbus.RunOnce;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.fixtures.FaultyStorageEngine.HeldAppend;
import io.github.ringbus.fixtures.LoggedLines;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.modelling.command.ConcurrencyException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Another writer on the same event store (a second replica behind a load balancer, without command routing) appends
 * to an aggregate this bus holds in its cache: the store's unique key on aggregate and sequence number refuses the
 * next append built on the stale copy with Axon's {@link ConcurrencyException}, and ringbus reads the aggregate again
 * and handles the command again on it, as Axon Server's sequence conflict is handled, so that the command succeeds as
 * on {@code SimpleCommandBus}, which reads the aggregate at every command. A command that may not run twice fails
 * with the conflict instead.
 * <p>
 * The store is the in-memory engine behind {@code FaultyStorageEngine}, whose {@code anotherWriterAppends} checks the
 * aggregate's sequence numbers as a JDBC or JPA store's unique key does; {@code PostgresFaultInjectionTest} and the
 * JPA example show the same on PostgreSQL.
 */
class AnotherWriterTest {

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    @Test
    void aCommandOnACachedAggregateAnotherWriterAppendedToIsHandledAgainOnTheAggregateAsStored() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 3));
        ring.engine.anotherWriterAppends(new GenericDomainEventMessage<>("Account", "a", 2, new Deposited("a", 1000)));

        Outcome deposit = ring.send(new Deposit("a", 5));

        assertThat(deposit.awaitSuccess()).isEqualTo(1008L);
        assertThat(deposit.calls()).isEqualTo(1);
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 3), new Deposited("a", 1000), new Deposited("a", 5));
        assertThat(ring.storedSequenceNumbers("a")).containsExactly(0L, 1L, 2L, 3L);
    }

    @Test
    void aConflictHandledAgainIsSaidOnceInTheLogAtInfoNamingTheCommandAndWhatTheStoreRefused() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));
        ring.engine.anotherWriterAppends(new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 1000)));

        List<String> logged = LoggedLines.whileRunning(() -> ring.send(new Deposit("a", 5)).awaitSuccess());

        assertThat(logged).filteredOn(line -> line.contains("another writer appended")).singleElement()
                          .satisfies(line -> assertThat(line).contains(" INFO io.github.ringbus.RefusedBatch")
                                                             .contains("on aggregate [a]")
                                                             .contains("handled again on the aggregate as stored"));
        assertThat(logged).noneMatch(line -> line.contains(" WARN ") || line.contains(" ERROR "));
    }

    @Test
    void theCommandsBuiltOnTheStaleCopyInTheSameBatchAreHandledAgainToo() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Open("b"));
        ring.engine.anotherWriterAppends(new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 1000)));
        HeldAppend held = ring.engine.holdNextAppend();
        Outcome gate = ring.send(new Deposit("b", 1));
        held.awaitStarted();

        Outcome first = ring.send(new Deposit("a", 5));
        Outcome second = ring.send(new Deposit("a", 7));
        Outcome other = ring.send(new Deposit("b", 2));
        held.release();

        assertThat(gate.awaitSuccess()).isEqualTo(1L);
        assertThat(first.awaitSuccess()).isEqualTo(1005L);
        assertThat(second.awaitSuccess()).isEqualTo(1012L);
        assertThat(other.awaitSuccess()).isEqualTo(3L);
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 1000), new Deposited("a", 5), new Deposited("a", 7));
    }

    @Test
    void aCommandMarkedRunOnceFailsWithTheConflictInsteadOfRunningTwice() {
        ring = RingbusFixture.started();
        AtomicInteger runs = new AtomicInteger();
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Deposit d && d.amount() == 5) {
                runs.incrementAndGet();
                RunOnce.markCurrentUnitOfWork();
            }
            return chain.proceed();
        });
        ring.sendAndWait(new Open("a"));
        ring.engine.anotherWriterAppends(new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 1000)));

        Outcome deposit = ring.send(new Deposit("a", 5));

        assertThat(deposit.awaitFailure()).isInstanceOf(ConcurrencyException.class)
                                           .hasMessageContaining("aggregate [a]");
        assertThat(runs).hasValue(1);
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 1000));
    }

    @Test
    void afterTheConflictTheAggregateIsReadFromTheStoreForItsNextCommand() {
        ring = RingbusFixture.started();
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Deposit d && d.amount() == 5) {
                RunOnce.markCurrentUnitOfWork();
            }
            return chain.proceed();
        });
        ring.sendAndWait(new Open("a"));
        ring.engine.anotherWriterAppends(new GenericDomainEventMessage<>("Account", "a", 1, new Deposited("a", 1000)));
        ring.send(new Deposit("a", 5)).awaitFailure();

        assertThat(ring.send(new Deposit("a", 1)).awaitSuccess()).isEqualTo(1001L);
    }
}
