package io.github.ringbus.stages;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.messaging.ResultMessage;
import org.axonframework.messaging.unitofwork.AbstractUnitOfWork;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.ExecutionResult;
import org.axonframework.messaging.unitofwork.MessageProcessingContext;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.messaging.unitofwork.UnitOfWork;

import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.function.Consumer;
import java.util.function.Function;

import static org.axonframework.messaging.GenericResultMessage.asResultMessage;

/**
 * The Unit of Work of one slot, reused for every command that passes through the slot.
 * <p>
 * It is started on the handle stage's thread, where the handler and Axon's handler interceptors find it as the
 * current Unit of Work; it is then paused, and resumed on the complete stage's thread, where it commits (after the
 * command's events were stored) or rolls back. It is always a root Unit of Work: a command dispatched from inside a
 * handler runs later, in a slot of its own.
 */
public final class SlotUnitOfWork extends AbstractUnitOfWork<CommandMessage<?>> {

    private final CommandSlot slot;
    private final MessageProcessingContext<CommandMessage<?>> context = new MessageProcessingContext<>(null);

    SlotUnitOfWork(CommandSlot slot) {
        this.slot = slot;
    }

    /**
     * @return the slot whose command this Unit of Work processes
     */
    public CommandSlot slot() {
        return slot;
    }

    /** Prepares this Unit of Work for the slot's next command and makes it the current one of this thread. */
    void startFor(CommandMessage<?> command) {
        context.reset(command);
        setPhase(Phase.NOT_STARTED);
        resources().clear();
        correlationDataProviders().clear();
        start();
    }

    void recordResult(Object result) {
        context.setExecutionResult(new ExecutionResult(asResultMessage(result)));
    }

    /** Detaches this Unit of Work from the current thread (the handle stage) without ending it. */
    void pause() {
        CurrentUnitOfWork.clear(this);
    }

    /** Attaches this Unit of Work to the current thread (the complete stage) to commit or roll it back. */
    void resume() {
        CurrentUnitOfWork.set(this);
    }

    @Override
    public Optional<UnitOfWork<?>> parent() {
        return Optional.empty();
    }

    @Override
    public CommandMessage<?> getMessage() {
        return context.getMessage();
    }

    @Override
    public UnitOfWork<CommandMessage<?>> transformMessage(
            Function<CommandMessage<?>, ? extends org.axonframework.messaging.Message<?>> transformOperator) {
        context.transformMessage(transformOperator);
        return this;
    }

    @Override
    public ExecutionResult getExecutionResult() {
        return context.getExecutionResult();
    }

    @Override
    public <R> ResultMessage<R> executeWithResult(Callable<R> task, RollbackConfiguration rollbackConfiguration) {
        throw new UnsupportedOperationException(
                "A ringbus slot's Unit of Work is driven by the pipeline's stages, not by executeWithResult");
    }

    @Override
    protected void notifyHandlers(Phase phase) {
        context.notifyHandlers(this, phase);
    }

    @Override
    protected void addHandler(Phase phase, Consumer<UnitOfWork<CommandMessage<?>>> handler) {
        context.addHandler(phase, handler);
    }

    @Override
    protected void setExecutionResult(ExecutionResult executionResult) {
        context.setExecutionResult(executionResult);
    }

    @Override
    protected void setRollbackCause(Throwable cause) {
        setExecutionResult(new ExecutionResult(asResultMessage(cause)));
    }
}
