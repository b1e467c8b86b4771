package io.github.ringbus;

import org.axonframework.modelling.command.ConcurrencyException;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayDeque;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.Set;

/**
 * What a failure of the store stage's append or commit says about the store, read from JDBC's exception types and
 * SQLStates (the standard classes, and PostgreSQL's own where it has them) and from Axon Server's error codes
 * ({@link AxonServerFailures}): whether the transaction was rolled back, whether the store cannot be reached at all,
 * whether another writer appended to an aggregate first, and whether the database refused the transaction for a
 * conflict between transactions that may not recur. The one place the store stage's recovery learns this;
 * stateless.
 * <p>
 * Tests: {@code StoreRecoveryTest}, {@code postgres.PostgresFaultInjectionTest}.
 */
final class StoreFailures {

    private StoreFailures() {
    }

    /**
     * Whether a failure of {@code commit()} says that the database rolled the transaction back: anywhere in its causes,
     * an SQLState of class 23 (integrity constraint violation, of a deferred constraint), 40 (transaction rollback:
     * serialization failure, deadlock) or 25P02 (the transaction was aborted), or Axon Server's refusal of the
     * transaction ({@link AxonServerFailures#rolledBack}). Any other failure of a commit leaves its outcome unknown.
     *
     * @param failure what a commit threw
     * @return true when nothing of the transaction was committed
     */
    static boolean rolledBack(Throwable failure) {
        return anyCause(failure, t -> t instanceof SQLException sqlException
                && sqlState(sqlException, state -> state.startsWith("23") || state.startsWith("40")
                        || state.equals("25P02"))
                || AxonServerFailures.rolledBack(t));
    }

    /**
     * Whether the store refused an append because an aggregate's events do not follow those it holds: another
     * writer appended to the aggregate first, so that the state the command was handled on is out of date. Axon
     * Server says so with {@value AxonServerFailures#INVALID_EVENT_SEQUENCE}; Axon's JDBC and JPA storage engines with
     * a {@link ConcurrencyException} (their persistence exception resolver found the unique key on aggregate and
     * sequence number violated: another replica on the same database appended first). Nothing of the transaction is
     * stored. A duplicate first event ({@code AggregateStreamCreationException}) is not a conflict of this kind: a
     * second creation of one aggregate stays refused.
     *
     * @param failure what an attempt threw
     * @return true when the command is worth handling again on the aggregate as stored
     */
    static boolean sequenceConflict(Throwable failure) {
        return anyCause(failure, t -> t instanceof ConcurrencyException || AxonServerFailures.sequenceConflict(t));
    }

    /**
     * Whether the database refused the transaction for a conflict of its own making between transactions, which the
     * same transaction tried again a moment later may not meet: anywhere in its causes, SQLState 40001 (serialization
     * failure: a {@code SERIALIZABLE} or {@code REPEATABLE READ} transaction, CockroachDB's "restart transaction") or
     * 40P01 (PostgreSQL: deadlock detected, e.g. between a subscriber's projection update in the store's transaction
     * and another writer). The transaction is rolled back; nothing of it is stored.
     *
     * @param failure what an attempt threw
     * @return true when trying the same group again after a pause may store it
     */
    static boolean transientConflict(Throwable failure) {
        return anyCause(failure, t -> t instanceof SQLException sqlException
                && sqlState(sqlException, state -> state.equals("40001") || state.equals("40P01")));
    }

    /**
     * Whether a failure shows that the store cannot be reached, so that trying the batch's commands apart would only
     * fail again: anywhere in its causes (and suppressed exceptions), a JDBC connection exception
     * ({@link SQLTransientConnectionException}, {@link SQLNonTransientConnectionException},
     * {@link SQLRecoverableException}), SQLState class 08 (connection exception), 57P (PostgreSQL: session
     * terminated, server shutting down or starting, database dropped) or 53300 (too many connections), or Axon
     * Server's lost connection or missing leader ({@link AxonServerFailures#unreachable}). Anything else
     * (a conflict, a data exception, a constraint or trigger, a serializer's error, a deadlock, any exception of the
     * engine or of a subscriber) is taken for the failure of some command, which the store stage isolates.
     *
     * @param failure what an attempt threw
     * @return true to fail every command not yet committed, false to isolate the culprit
     */
    static boolean unreachable(Throwable failure) {
        return anyCause(failure, t -> t instanceof SQLTransientConnectionException
                || t instanceof SQLNonTransientConnectionException || t instanceof SQLRecoverableException
                || (t instanceof SQLException sqlException
                    && sqlState(sqlException, state -> state.startsWith("08") || state.startsWith("57P")
                            || state.equals("53300")))
                || AxonServerFailures.unreachable(t));
    }

    private static boolean sqlState(SQLException exception, java.util.function.Predicate<String> test) {
        String state = exception.getSQLState();
        return state != null && test.test(state);
    }

    /**
     * Whether {@code test} holds for a failure or anything behind it: its causes, its suppressed exceptions and, for
     * an {@link SQLException}, its chain of next exceptions; at most 64 of them, each once.
     */
    private static boolean anyCause(Throwable failure, java.util.function.Predicate<Throwable> test) {
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<Throwable> pending = new ArrayDeque<>();
        pending.add(failure);
        while (!pending.isEmpty() && seen.size() < 64) {
            Throwable t = pending.poll();
            if (!seen.add(t)) {
                continue;
            }
            if (test.test(t)) {
                return true;
            }
            if (t instanceof SQLException sqlException && sqlException.getNextException() != null) {
                pending.add(sqlException.getNextException());
            }
            if (t.getCause() != null) {
                pending.add(t.getCause());
            }
            for (Throwable suppressed : t.getSuppressed()) {
                pending.add(suppressed);
            }
        }
        return false;
    }
}
