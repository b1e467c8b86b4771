package io.github.ringbus;

import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;

import java.sql.SQLException;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * What a command's caller is told when the store failed its events: an exception that names the caller's own command
 * and aggregate and the store's real cause, with the store's failure as its cause. Axon's storage engines describe a
 * failed append by the first event of the whole batch, and say "was already inserted" for every failure of a domain
 * event, a lost connection included; one append of ringbus carries many callers' commands, so that message would
 * name an aggregate most of them never targeted and a duplicate that never was. Stateless; used by the store thread.
 * <p>
 * Kept as they are: a conflict ({@code ConcurrencyException}, {@code AggregateStreamCreationException}: Axon's own
 * types, which a gateway's retry scheduler and user code act on, and whose message names the aggregate that
 * conflicted), and what a subscriber of the store threw (user code's own exception).
 */
final class StoreFailureNotice {

    private StoreFailureNotice() {
    }

    /**
     * The store cannot be reached, or no transaction could begin: the command's events were not stored.
     *
     * @param slot    the failed command
     * @param failure what the attempt threw, perhaps for another command of its batch
     * @return an {@link EventStoreException} naming the command, its aggregate and the real cause
     */
    static EventStoreException unreachable(CommandSlot slot, Throwable failure) {
        return new EventStoreException(
                "Command [" + slot.commandName() + "] on aggregate [" + aggregateOf(slot) + "] failed: the event store "
                        + "could not be reached, nothing of the command is stored (cause: " + rootCause(failure) + ")",
                failure);
    }

    /**
     * The store refused the command's own append (it was alone in its attempt), for a reason other than a conflict.
     *
     * @param slot    the failed command
     * @param failure what its append threw
     * @return {@code failure} itself where it is not Axon's {@link EventStoreException} (an engine's or a driver's
     *         own exception, which says what it says), else an {@link EventStoreException} naming the command, its
     *         aggregate and the real cause in place of Axon's "was already inserted"
     */
    static Throwable refused(CommandSlot slot, Throwable failure) {
        if (failure.getClass() != EventStoreException.class) {
            return failure;
        }
        return new EventStoreException(
                "Command [" + slot.commandName() + "] on aggregate [" + aggregateOf(slot) + "] failed: the event store "
                        + "refused its events, nothing of the command is stored (cause: " + rootCause(failure) + ")",
                failure);
    }

    /**
     * The commit of the command's batch failed without saying whether it was committed.
     *
     * @param slot     the command
     * @param commands how many commands with events the batch held
     * @param failure  what the commit threw
     */
    static CommitOutcomeUnknownException outcomeUnknown(CommandSlot slot, long commands, Throwable failure) {
        return new CommitOutcomeUnknownException(
                "The commit of command [" + slot.commandName() + "] on aggregate [" + aggregateOf(slot) + "] (with "
                        + (commands - 1) + " other command(s) in one transaction) failed without saying whether it "
                        + "was committed; its events may be stored, and are not appended again (cause: "
                        + rootCause(failure) + ")", failure);
    }

    /**
     * @return the identifier of the command's target aggregate, else of the aggregate of its first domain event, else
     *         "none"
     */
    static String aggregateOf(CommandSlot slot) {
        if (slot.holder != null) {
            return slot.holder.identifier();
        }
        for (int i = 0; i < slot.events.size(); i++) {
            EventMessage<?> event = slot.events.get(i);
            if (event instanceof DomainEventMessage<?> domain && domain.getAggregateIdentifier() != null) {
                return domain.getAggregateIdentifier();
            }
        }
        return "none";
    }

    /**
     * The real cause of a failure: its innermost {@link SQLException} with its SQLState, where it has one, then its
     * innermost cause where that is another exception: "PSQLException [SQLState 08006]: An I/O error occurred while
     * sending to the backend. (SocketException: Broken pipe)"; the failure's own message where it has no cause.
     */
    static String rootCause(Throwable failure) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        Throwable root = failure;
        SQLException sql = failure instanceof SQLException first ? first : null;
        while (root.getCause() != null && seen.add(root)) {
            root = root.getCause();
            if (root instanceof SQLException cause) {
                sql = cause;
            }
        }
        if (sql == null) {
            return describe(root);
        }
        String text = describe(sql);
        return sql == root ? text : text + " (" + describe(root) + ")";
    }

    private static String describe(Throwable failure) {
        StringBuilder text = new StringBuilder(failure.getClass().getSimpleName());
        if (failure instanceof SQLException sql && sql.getSQLState() != null) {
            text.append(" [SQLState ").append(sql.getSQLState()).append(']');
        }
        return text.append(": ").append(failure.getMessage()).toString();
    }
}
