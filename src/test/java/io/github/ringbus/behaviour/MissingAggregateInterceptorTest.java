package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A command whose aggregate cannot be loaded (it does not exist, or the command names none) passes through the bus's
 * handler interceptors as on Axon's buses, where the handler fails to load the aggregate only after the
 * interceptors ran, inside the command's Unit of Work: the interceptors see it, the Unit of Work rolls back, and an
 * interceptor that answers without proceeding gives the command's result.
 */
class MissingAggregateInterceptorTest {

    private final RingbusFixture ring = RingbusFixture.started(b -> b.handlerThreads(2));
    private final SimpleBusTwin simple = new SimpleBusTwin();

    @AfterEach
    void shutDown() {
        ring.close();
        simple.close();
    }

    private void registerOnBoth(MessageHandlerInterceptor<? super CommandMessage<?>> interceptor) {
        ring.bus.registerHandlerInterceptor(interceptor);
        simple.handlerInterceptor(interceptor);
    }

    @Test
    void handlerInterceptorSeesACommandForAMissingAggregateAsOnSimpleCommandBus() {
        List<String> seen = new CopyOnWriteArrayList<>();
        registerOnBoth((unitOfWork, chain) -> {
            seen.add(unitOfWork.getMessage().getPayloadType().getSimpleName());
            return chain.proceed();
        });

        Throwable onRing = ring.send(new Deposit("missing", 5)).awaitFailure();
        CommandResultMessage<?> onSimple = simple.send(new Deposit("missing", 5));

        assertThat(seen).containsExactly("Deposit", "Deposit");
        assertThat(onRing).isInstanceOf(AggregateNotFoundException.class)
                          .hasSameClassAs(onSimple.exceptionResult());
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void unitOfWorkOfACommandForAMissingAggregateRollsBackAsOnSimpleCommandBus() {
        List<String> phases = new CopyOnWriteArrayList<>();
        registerOnBoth((unitOfWork, chain) -> {
            unitOfWork.onRollback(u -> phases.add("rollback " + u.getExecutionResult().getExceptionResult()
                                                                   .getClass().getSimpleName()));
            unitOfWork.afterCommit(u -> phases.add("after commit"));
            unitOfWork.onCleanup(u -> phases.add("cleanup"));
            return chain.proceed();
        });

        ring.send(new Deposit("missing", 5)).awaitFailure();
        List<String> onRing = List.copyOf(phases);
        phases.clear();
        simple.send(new Deposit("missing", 5));

        assertThat(onRing).containsExactlyElementsOf(phases)
                          .containsExactly("rollback AggregateNotFoundException", "cleanup");
    }

    @Test
    void handlerInterceptorThatDoesNotProceedAnswersACommandForAMissingAggregateAsOnSimpleCommandBus() {
        registerOnBoth((unitOfWork, chain) -> unitOfWork.getMessage().getPayload() instanceof Deposit
                ? "answered by the interceptor"
                : chain.proceed());

        Object onRing = ring.send(new Deposit("missing", 5)).awaitSuccess();
        CommandResultMessage<?> onSimple = simple.send(new Deposit("missing", 5));

        assertThat(onSimple.isExceptional()).isFalse();
        assertThat(onRing).isEqualTo(onSimple.getPayload()).isEqualTo("answered by the interceptor");
        assertThat(ring.storedEvents("missing")).isEmpty();
    }

    @Test
    void handlerInterceptorSeesACommandThatNamesNoTargetAggregateAsOnSimpleCommandBus() {
        List<String> seen = new CopyOnWriteArrayList<>();
        registerOnBoth((unitOfWork, chain) -> {
            seen.add(unitOfWork.getMessage().getPayloadType().getSimpleName());
            return chain.proceed();
        });

        Throwable onRing = ring.send(new Deposit(null, 5)).awaitFailure();
        CommandResultMessage<?> onSimple = simple.send(new Deposit(null, 5));

        assertThat(seen).containsExactly("Deposit", "Deposit");
        assertThat(onRing).hasSameClassAs(onSimple.exceptionResult())
                          .hasMessage(onSimple.exceptionResult().getMessage());
    }
}
