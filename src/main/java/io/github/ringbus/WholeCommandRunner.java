package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandResultMessage;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.messaging.DefaultInterceptorChain;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.ResultMessage;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.messaging.unitofwork.UnitOfWork;

import java.util.List;

/**
 * Runs a command of an aggregate that keeps a repository of its own (a state-stored one: a JPA entity with Axon's
 * {@code GenericJpaRepository}; or, under Spring, one whose {@code @Aggregate} names a repository bean) whole, on the handler thread that owns its aggregate, exactly as Axon's
 * {@code SimpleCommandBus} runs every command: in a Unit of Work of its own with a transaction of the bus's
 * {@link TransactionManager} attached, through the handler interceptors.
 * <p>
 * Within that one transaction and on that one thread: the repository loads the aggregate and takes its lock, the
 * handler runs, the repository saves (flushes) the entity, the events the aggregate applied are appended to the
 * event store and handed to its subscribers (the event bus's prepare-commit), the transaction commits, and the lock
 * is released at the Unit of Work's cleanup, before the thread takes its next command. The entity's change and its
 * events are committed together or not at all. Nothing of it reaches the slot's event list, so the store and
 * publish stages pass over the command: it gets no group commit. The complete stage only calls its callback.
 * <p>
 * A failure (of the handler, of prepare-commit, of the commit) is recorded in the slot as the handler's; the Unit of
 * Work rolled back when the rollback configuration said so, or when the commit failed.
 * <p>
 * The same for a command whose external handler declares a transaction ({@link TransactionalHandlers}): the ring's
 * repositories then load what it asks for from the store, in this Unit of Work, and its events are appended in its
 * transaction at prepare-commit, as Axon's repository and event store do on {@code SimpleCommandBus}.
 * <p>
 * Tests: {@code OwnRepositoryAggregateTest}, {@code model.HandSubscribedAggregateHandlerTest},
 * {@code postgres.TransactionalHandlerTest}.
 */
final class WholeCommandRunner {

    private final List<MessageHandlerInterceptor<? super CommandMessage<?>>> interceptors;
    private final RollbackConfiguration rollbackConfiguration;
    private final TransactionManager transactionManager;

    WholeCommandRunner(List<MessageHandlerInterceptor<? super CommandMessage<?>>> interceptors,
                             RollbackConfiguration rollbackConfiguration,
                             TransactionManager transactionManager) {
        this.interceptors = interceptors;
        this.rollbackConfiguration = rollbackConfiguration;
        this.transactionManager = transactionManager;
    }

    /**
     * Handles the slot's command to its end (commit or rollback) on the calling thread.
     *
     * @param loadsFromStore true when the ring's repositories are to serve this command's loads from the store, in
     *                       its Unit of Work and transaction, as Axon's repository does ({@link OutsideRingRepository}):
     *                       a command whose handler declares a transaction, run once every earlier command completed
     */
    void run(CommandSlot slot, boolean loadsFromStore) {
        // A Unit of Work and interceptor chain per command, as SimpleCommandBus allocates: this path does database
        // work (load, lock, flush, commit) far costlier than these objects, and its Unit of Work must end here.
        UnitOfWork<CommandMessage<?>> unitOfWork = DefaultUnitOfWork.startAndGet(slot.command);
        if (loadsFromStore) {
            OutsideRingRepository.serveOnThisThread(unitOfWork);
        }
        try {
            unitOfWork.attachTransaction(transactionManager);
        } catch (Throwable noTransaction) {
            // attachTransaction has rolled the Unit of Work back.
            slot.handlerFailure = noTransaction;
            slot.rolledBack = true;
            return;
        }
        DefaultInterceptorChain<CommandMessage<?>> chain =
                new DefaultInterceptorChain<>(unitOfWork, interceptors, slot.handler);
        ResultMessage<?> result = unitOfWork.executeWithResult(chain::proceed, rollbackConfiguration);
        // The result message itself, so that the callback gets its metadata too (as on SimpleCommandBus).
        slot.result = GenericCommandResultMessage.asCommandResultMessage(result);
        if (result.isExceptional()) {
            slot.handlerFailure = result.exceptionResult();
            slot.rolledBack = unitOfWork.isRolledBack();
        }
    }
}
