package io.github.ringbus;

import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;

/**
 * Tells ringbus that a command's handler did something that must not happen twice.
 * <p>
 * When the store refuses a command's events, ringbus handles the later commands of the same aggregate, which were
 * handled on top of those events, a second time on the aggregate as stored, so that only the refused command fails,
 * as on {@code SimpleCommandBus}. A command whose handler called out (a message sent, a service called, a mail sent)
 * would do that again. ringbus sees the commands a handler sends through it and the prepare-commit handlers its Unit of
 * Work ran; for anything else, the handler marks its Unit of Work with {@link #markCurrentUnitOfWork()} (or puts
 * {@link #RESOURCE} among its resources), and such a command then fails, as built on events that failed to be stored,
 * rather than run again. {@code DistributedRingCommandBus} marks the Unit of Work of a handler that sends a command to
 * another node.
 * <p>
 * Thread-safe (it touches only the calling thread's Unit of Work); without a current Unit of Work it does nothing.
 * <p>
 * Tests: {@code StoreRecoveryTest}, {@code behaviour.RefusedAppendNeighboursTest}.
 */
public final class RunOnce {

    /** The Unit of Work resource that marks a command as not to be handled a second time; any value. */
    public static final String RESOURCE = "io.github.ringbus.RunOnce";

    private RunOnce() {
    }

    /**
     * Marks the calling thread's current Unit of Work (its root, where a command's Unit of Work nests another): the
     * command it runs is never handled a second time by ringbus. Does nothing when no Unit of Work is current.
     */
    public static void markCurrentUnitOfWork() {
        if (CurrentUnitOfWork.isStarted()) {
            CurrentUnitOfWork.get().root().resources().put(RESOURCE, Boolean.TRUE);
        }
    }

    /**
     * @param unitOfWork a command's Unit of Work
     * @return true when it was marked
     */
    static boolean isMarked(UnitOfWork<?> unitOfWork) {
        return unitOfWork.resources().containsKey(RESOURCE);
    }
}
