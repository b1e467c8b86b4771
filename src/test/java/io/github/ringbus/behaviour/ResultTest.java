package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Tally;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Reject;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.GenericCommandResultMessage;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.GenericResultMessage;
import org.axonframework.messaging.Message;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.correlation.MessageOriginProvider;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * The result message a command's callback receives is the one Axon's {@code SimpleCommandBus} gives for the same
 * command, handler and interceptors: the same payload (a handler's own result message passes as Axon passes it), and
 * the same meta data, which includes the correlation data of the command's Unit of Work when Axon's
 * {@link CorrelationDataInterceptor} is registered (on success and on a handler's failure; not on a failure of the
 * commit, which Axon builds after its Unit of Work has ended).
 */
class ResultTest {

    private final RingbusFixture ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1));
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

    private void subscribeOnBoth(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        ring.bus.subscribe(commandName, handler);
        simple.subscribe(commandName, handler);
    }

    /** Sends the same command message (same identifier) to both buses and returns {ring's, SimpleCommandBus's}. */
    private List<CommandResultMessage<?>> sendToBoth(CommandMessage<?> command) {
        return List.of(ring.send(command).await(), simple.send(command));
    }

    private static void assertSameResult(List<CommandResultMessage<?>> results) {
        CommandResultMessage<?> onRing = results.get(0);
        CommandResultMessage<?> onSimple = results.get(1);
        assertThat(onRing.getClass()).as("result class").isEqualTo(onSimple.getClass());
        assertThat(onRing.isExceptional()).as("exceptional: %s", onRing).isEqualTo(onSimple.isExceptional());
        if (onSimple.isExceptional()) {
            assertThat(onRing.exceptionResult()).hasSameClassAs(onSimple.exceptionResult())
                                                .hasMessage(onSimple.exceptionResult().getMessage());
        } else {
            assertThat((Object) onRing.getPayload()).as("payload").isEqualTo(onSimple.getPayload());
        }
        assertThat(onRing.getMetaData()).as("meta data").isEqualTo(onSimple.getMetaData());
    }

    private static CommandMessage<Object> withTrace(Object payload) {
        return asCommandMessage(payload).andMetaData(Map.of("traceId", "trace-of-the-caller"));
    }

    @Test
    void theUnitOfWorksExecutionResultIsTheMessageTheCallerGetsAsOnSimpleCommandBus() {
        List<Message<?>> executionResults = new java.util.concurrent.CopyOnWriteArrayList<>();
        registerOnBoth((unitOfWork, chain) -> {
            unitOfWork.afterCommit(u -> executionResults.add(u.getExecutionResult().getResult()));
            return chain.proceed();
        });
        subscribeOnBoth("answer", command -> "forty-two");

        CommandMessage<Object> named = new GenericCommandMessage<>(new GenericMessage<>("question"), "answer");
        List<CommandResultMessage<?>> results = sendToBoth(named);

        assertSameResult(results);
        assertThat(executionResults).hasSize(2);
        assertThat(executionResults.get(0).getIdentifier()).as("ring").isEqualTo(results.get(0).getIdentifier());
        assertThat(executionResults.get(1).getIdentifier()).as("simple").isEqualTo(results.get(1).getIdentifier());
        assertThat((Object) executionResults.get(0).getPayload()).isEqualTo("forty-two");
    }

    @Test
    void successfulResultCarriesTheCommandsCorrelationDataAsOnSimpleCommandBus() {
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        ring.sendAndWait(new Open("a"));
        simple.send(new Open("a"));
        CommandMessage<Object> deposit = withTrace(new Deposit("a", 5));

        List<CommandResultMessage<?>> results = sendToBoth(deposit);

        assertSameResult(results);
        assertThat(results.get(0).getMetaData()).containsEntry("correlationId", deposit.getIdentifier())
                                                .containsEntry("traceId", "trace-of-the-caller");
    }

    @Test
    void handlerFailureCarriesTheCommandsCorrelationDataAsOnSimpleCommandBus() {
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        ring.sendAndWait(new Open("a"));
        simple.send(new Open("a"));
        CommandMessage<Object> reject = withTrace(new Reject("a"));

        List<CommandResultMessage<?>> results = sendToBoth(reject);

        assertSameResult(results);
        assertThat(results.get(0).isExceptional()).isTrue();
        assertThat(results.get(0).getMetaData()).containsEntry("correlationId", reject.getIdentifier());
    }

    @Test
    void checkedFailureThatDoesNotRollBackCarriesTheCommandsCorrelationDataAsOnSimpleCommandBus() {
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        ring.sendAndWait(new Tally.Start("t"));
        simple.send(new Tally.Start("t"));
        CommandMessage<Object> failing = withTrace(new Tally.AddThenFailChecked("t", 3));

        List<CommandResultMessage<?>> results = sendToBoth(failing);

        assertSameResult(results);
        assertThat(results.get(0).exceptionResult()).isInstanceOf(Tally.TallyException.class);
        assertThat(results.get(0).getMetaData()).containsEntry("correlationId", failing.getIdentifier());
    }

    @Test
    void failureOfTheCommitPhaseCarriesNoCorrelationDataAsOnSimpleCommandBus() {
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        registerOnBoth((unitOfWork, chain) -> {
            unitOfWork.onPrepareCommit(u -> {
                throw new IllegalStateException("prepare-commit handler vetoes");
            });
            return chain.proceed();
        });
        CommandMessage<Object> open = withTrace(new Open("a"));

        List<CommandResultMessage<?>> results = sendToBoth(open);

        assertSameResult(results);
        assertThat(results.get(0).exceptionResult()).hasMessage("prepare-commit handler vetoes");
    }

    @Test
    void resultMetaDataOfAReusedSlotIsOnlyItsOwnCommandsCorrelationData() {
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        ring.sendAndWait(new Open("a"));
        simple.send(new Open("a"));

        for (int i = 0; i < 10; i++) {
            CommandMessage<Object> deposit = i % 2 == 0 ? withTrace(new Deposit("a", i))
                                                        : asCommandMessage(new Deposit("a", i));
            List<CommandResultMessage<?>> results = sendToBoth(deposit);
            assertSameResult(results);
            assertThat(results.get(0).getMetaData()).containsEntry("correlationId", deposit.getIdentifier());
        }
    }

    @Test
    void handlerReturningACommandResultMessageGivesThatVeryMessageAsOnSimpleCommandBus() {
        CommandResultMessage<String> own = new GenericCommandResultMessage<>("own", Map.of("k", "v"));
        subscribeOnBoth("returns-result", command -> own);
        CommandMessage<Object> command = new GenericCommandMessage<>(new GenericMessage<>("x"), "returns-result");

        List<CommandResultMessage<?>> results = sendToBoth(command);

        assertThat(results.get(1)).isSameAs(own);
        assertThat(results.get(0)).isSameAs(own);
    }

    @Test
    void handlerReturningAResultMessageGetsItWrappedAsOnSimpleCommandBus() {
        GenericResultMessage<String> own = new GenericResultMessage<>("own", Map.of("k", "v"));
        subscribeOnBoth("returns-result", command -> own);
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));

        List<CommandResultMessage<?>> results =
                sendToBoth(new GenericCommandMessage<>(new GenericMessage<>("x"), "returns-result"));

        assertSameResult(results);
        assertThat(results.get(0).getIdentifier()).isEqualTo(results.get(1).getIdentifier())
                                                  .isEqualTo(own.getIdentifier());
    }

    @Test
    void handlerReturningAnExceptionalResultMessageGetsItAsOnSimpleCommandBus() {
        GenericResultMessage<String> own = new GenericResultMessage<>(new IllegalStateException("told, not thrown"));
        subscribeOnBoth("returns-failure", command -> own);

        List<CommandResultMessage<?>> results =
                sendToBoth(new GenericCommandMessage<>(new GenericMessage<>("x"), "returns-failure"));

        assertSameResult(results);
        assertThat(results.get(0).exceptionResult()).isSameAs(own.exceptionResult());
    }

    @Test
    void handlerReturningAPlainMessageGetsTheResultSimpleCommandBusGives() {
        Message<String> own = new GenericMessage<>("own", Map.of("k", "v"));
        subscribeOnBoth("returns-message", command -> own);
        registerOnBoth(new CorrelationDataInterceptor<>(new MessageOriginProvider()));
        CommandMessage<Object> command = new GenericCommandMessage<>(new GenericMessage<>("x"), "returns-message");

        List<CommandResultMessage<?>> results = sendToBoth(command);

        assertSameResult(results);
        assertThat(results.get(0).getMetaData()).containsEntry("k", "v")
                                                .containsEntry("correlationId", command.getIdentifier());
    }
}
