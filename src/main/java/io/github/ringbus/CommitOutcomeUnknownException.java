package io.github.ringbus;

import org.axonframework.eventsourcing.eventstore.EventStoreException;

/**
 * Reported to a command's callback when the commit of the transaction that held its events failed in a way that does
 * not tell whether it was committed: the transaction manager threw from {@code commit()} (a lost connection, a
 * commit hook that failed after the database committed), and the database did not say it rolled back. The command's
 * events may be stored, wholly, or not at all; never in part, and never twice: ringbus does not append them again.
 * Read the aggregate to know. Every later command of the aggregate that was handled on top of these events fails too,
 * and the next one starts from what is really stored.
 */
public class CommitOutcomeUnknownException extends EventStoreException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what was committed when
     * @param cause   what the commit threw
     */
    public CommitOutcomeUnknownException(String message, Throwable cause) {
        super(message, cause);
    }
}
