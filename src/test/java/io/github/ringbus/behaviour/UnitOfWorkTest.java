package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MetaData;
import org.axonframework.messaging.correlation.MessageOriginProvider;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Each command runs in an Axon Unit of Work that handler interceptors see as the current one: it commits after the
 * command's events are stored (so {@code afterCommit} sees them in the storage engine) and rolls back when the handler
 * or the store fails. Dispatch interceptors and Axon's correlation data work as on any Axon command bus.
 */
class UnitOfWorkTest {

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    /** What the Unit of Work phases of the deposits of one amount observed. */
    private static final class Phases {
        final AtomicInteger afterCommit = new AtomicInteger();
        final AtomicInteger rollback = new AtomicInteger();
        final List<List<Object>> storedAtAfterCommit = new CopyOnWriteArrayList<>();
        final List<Throwable> rollbackCauses = new CopyOnWriteArrayList<>();
    }

    /** Registers a handler interceptor that watches the Unit of Work of every command for aggregate "a". */
    private Phases watchUnitOfWork(long watchedAmount) {
        Phases phases = new Phases();
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            Object payload = unitOfWork.getMessage().getPayload();
            boolean watched = payload instanceof Deposit d && d.amount() == watchedAmount
                    || payload instanceof DepositThenFail f && f.amount() == watchedAmount;
            if (watched) {
                unitOfWork.afterCommit(u -> {
                    phases.afterCommit.incrementAndGet();
                    phases.storedAtAfterCommit.add(ring.storedPayloads("a"));
                });
                unitOfWork.onRollback(u -> {
                    phases.rollback.incrementAndGet();
                    phases.rollbackCauses.add(u.getExecutionResult().getExceptionResult());
                });
            }
            return chain.proceed();
        });
        return phases;
    }

    @Test
    void afterCommitRunsOnceAndFindsTheCommandsEventsAlreadyInTheStorageEngine() {
        ring = RingbusFixture.started(b -> b.ringSize(2)); // slots and their Units of Work are reused at once
        Phases phases = watchUnitOfWork(10);
        ring.sendAndWait(new Open("a"));

        Outcome deposit = ring.send(new Deposit("a", 10));
        deposit.awaitSuccess();
        for (int i = 0; i < 5; i++) {
            ring.sendAndWait(new Deposit("a", 1)); // reuse the slot; completes after the first, whose afterCommit ran
        }

        assertThat(phases.afterCommit).hasValue(1);
        assertThat(phases.storedAtAfterCommit).hasSize(1);
        assertThat(phases.storedAtAfterCommit.get(0)).contains(new Deposited("a", 10));
        assertThat(phases.rollback).hasValue(0);
    }

    @Test
    void onRollbackRunsOnceForAFailingHandlerAndAfterCommitNever() {
        ring = RingbusFixture.started(b -> b.ringSize(2));
        Phases phases = watchUnitOfWork(1000);
        ring.sendAndWait(new Open("a"));

        Throwable failure = ring.send(new DepositThenFail("a", 1000)).awaitFailure();
        for (int i = 0; i < 5; i++) {
            ring.sendAndWait(new Deposit("a", 1));
        }

        assertThat(phases.rollback).hasValue(1);
        assertThat(phases.rollbackCauses).singleElement().isSameAs(failure);
        assertThat(phases.afterCommit).hasValue(0);
        assertThat(ring.storedPayloads("a")).hasSize(6).doesNotContain(new Deposited("a", 1000));
    }

    @Test
    void onRollbackRunsOnceWhenTheAppendFailsAndAfterCommitNever() {
        ring = RingbusFixture.started();
        Phases phases = watchUnitOfWork(5);
        ring.sendAndWait(new Open("a"));

        ring.engine.failAppends(true);
        Throwable failure = ring.send(new Deposit("a", 5)).awaitFailure();
        ring.engine.failAppends(false);
        ring.sendAndWait(new Deposit("a", 1));

        assertThat(failure).isInstanceOf(EventStoreException.class);
        assertThat(phases.rollback).hasValue(1);
        assertThat(phases.rollbackCauses).singleElement().isSameAs(failure);
        assertThat(phases.afterCommit).hasValue(0);
    }

    /**
     * Axon rolls a Unit of Work back when a prepare-commit handler fails, and the bus promises that a failed
     * command's events are neither stored nor published and that the next command does not see them.
     */
    @Test
    void failureInPrepareCommitDiscardsTheCommandsEventsLikeAnyOtherFailure() {
        ring = RingbusFixture.started();
        List<Object> published = new CopyOnWriteArrayList<>();
        ring.ringEventStore().subscribe(events -> events.forEach(event -> published.add(event.getPayload())));
        ring.sendAndWait(new Open("a"));
        ring.bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Deposit d && d.amount() == 5) {
                unitOfWork.onPrepareCommit(u -> {
                    throw new IllegalStateException("prepare commit refuses the deposit of 5");
                });
            }
            return chain.proceed();
        });

        Throwable failure = ring.send(new Deposit("a", 5)).awaitFailure();

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessageContaining("prepare commit refuses");
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
        assertThat(published).containsExactly(new Opened("a"));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(1L);
    }

    /**
     * Event dispatch interceptors of the event store run on the handler thread, where {@code publish} would run
     * them; one that throws fails the command like a handler that threw.
     */
    @Test
    void anEventDispatchInterceptorThatThrowsFailsItsCommandAndStoresNothingOfIt() {
        ring = RingbusFixture.started();
        List<Object> published = new CopyOnWriteArrayList<>();
        ring.ringEventStore().subscribe(events -> events.forEach(event -> published.add(event.getPayload())));
        ring.sendAndWait(new Open("a"));
        ring.eventStore.registerDispatchInterceptor(events -> (index, event) -> {
            if (event.getPayload() instanceof Deposited d && d.amount() == 5) {
                throw new IllegalStateException("the event interceptor refuses the deposit of 5");
            }
            return event;
        });

        Throwable failure = ring.send(new Deposit("a", 5)).awaitFailure();

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessageContaining("interceptor refuses");
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
        assertThat(published).containsExactly(new Opened("a"));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(1L);
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void metadataAddedByADispatchInterceptorReachesTheHandler() {
        ring = RingbusFixture.started();
        List<String> interceptedOn = new CopyOnWriteArrayList<>();
        MessageDispatchInterceptor<CommandMessage<?>> addTenant = messages -> (index, command) -> {
            interceptedOn.add(Thread.currentThread().getName());
            return command.andMetaData(Map.of("tenant", "acme"));
        };
        ring.bus.registerDispatchInterceptor(addTenant);
        ring.bus.subscribe("probe", CommandMessage::getMetaData);
        CommandMessage<Object> probe =
                new GenericCommandMessage<>(new GenericMessage<>("anything", Map.of("user", "u1")), "probe");

        Object seenByHandler = ring.send(probe).awaitSuccess();

        assertThat(seenByHandler).isInstanceOf(MetaData.class);
        assertThat((MetaData) seenByHandler).containsEntry("tenant", "acme").containsEntry("user", "u1");
        assertThat(interceptedOn).containsExactly(Thread.currentThread().getName());
    }

    @Test
    void eventsCarryTheirOwnCommandsCorrelationDataWhenTheCorrelationDataInterceptorIsRegistered() {
        ring = RingbusFixture.started(b -> b.ringSize(2).handlerThreads(1));
        ring.bus.registerHandlerInterceptor(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        CommandMessage<Object> open = asCommandMessage(new Open("a"));
        CommandMessage<Object> deposit = asCommandMessage(new Deposit("a", 4))
                .andMetaData(Map.of("traceId", "trace-of-the-caller"));
        CommandMessage<Object> secondDeposit = asCommandMessage(new Deposit("a", 6));

        ring.send(open).awaitSuccess();
        ring.send(deposit).awaitSuccess();
        ring.send(secondDeposit).awaitSuccess();

        // The tiny ring reuses the slots (and their Units of Work): each event must still carry its own command's.
        List<MetaData> metaData = ring.storedEvents("a").stream().map(DomainEventMessage::getMetaData)
                                      .collect(Collectors.toList());
        assertThat(metaData).hasSize(3);
        assertThat(metaData.get(0)).containsEntry("correlationId", open.getIdentifier())
                                   .containsEntry("traceId", open.getIdentifier());
        assertThat(metaData.get(1)).containsEntry("correlationId", deposit.getIdentifier())
                                   .containsEntry("traceId", "trace-of-the-caller");
        assertThat(metaData.get(2)).containsEntry("correlationId", secondDeposit.getIdentifier())
                                   .containsEntry("traceId", secondDeposit.getIdentifier());
    }
}
