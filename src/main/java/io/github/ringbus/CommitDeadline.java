package io.github.ringbus;

import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * How late after its timestamp an event may still be committed, so that no tracking processor skips an event for it.
 * <p>
 * Axon's JDBC and JPA readers keep a gap (an index inserted by a transaction still open) only while the event they
 * read after it is younger than the engine's {@code gapTimeout} (60 s by default; Axon issue #4829): an event older
 * than that makes the reader give up on every gap behind it, and the event that fills such a gap when its transaction
 * commits is never handled. An event is stamped when it is applied; on {@code SimpleCommandBus} it is committed as the
 * command ends. In the ring it may wait after that: for its batch's turn, for a store that is away and comes back,
 * for a connection, behind another store thread ({@link GapBound}). So before each attempt appends anything (its
 * transaction begun, which may itself wait for a connection), the store stage asks this bound for the first command
 * whose events are older than <b>half the engine's {@code gapTimeout}</b>; that command fails, nothing of it stored,
 * and the others of its group are tried again ({@link StoreRecovery}: it is the attempt's culprit). The other half is
 * the margin for the attempt itself and for the reader's lag. Time is Axon's event clock
 * ({@code GenericEventMessage.clock}), which the readers compare with too.
 * <p>
 * What an attempt does once it began (its append, its subscribers, its commit) is not bounded here: that is what a
 * command's own Unit of Work does on {@code SimpleCommandBus} too.
 * <p>
 * Immutable; used by the store threads. Tests: {@code postgres.PostgresLateCommitTest}, {@code CommitDeadlineTest}.
 */
final class CommitDeadline {

    private static final Logger logger = LoggerFactory.getLogger(CommitDeadline.class);

    /** Axon's default {@code gapTimeout}, assumed for an engine whose own cannot be read. */
    static final int AXON_DEFAULT_GAP_TIMEOUT_MILLIS = 60_000;

    private final Duration bound;
    private final int gapTimeoutMillis;

    /**
     * @param gapTimeoutMillis the storage engine's {@code gapTimeout}, at least 2 ms
     */
    CommitDeadline(int gapTimeoutMillis) {
        if (gapTimeoutMillis < 2) {
            throw new IllegalArgumentException("gapTimeout must be at least 2 ms, but was " + gapTimeoutMillis);
        }
        this.gapTimeoutMillis = gapTimeoutMillis;
        this.bound = Duration.ofMillis(gapTimeoutMillis / 2);
    }

    /**
     * @param eventStore the bus's event store
     * @return the bound for that store; null when its engine has no gap timeout (Axon's in-memory engine, Axon
     * Server, an engine ringbus does not know)
     */
    static CommitDeadline forStore(EventStore eventStore) {
        EventStorageEngine engine = AxonInternals.storageEngineOf(eventStore);
        int gapTimeout = AxonInternals.gapTimeoutOf(engine);
        if (gapTimeout < 0) {
            return null;
        }
        CommitDeadline deadline = new CommitDeadline(gapTimeout < 2 ? AXON_DEFAULT_GAP_TIMEOUT_MILLIS : gapTimeout);
        logger.info("A command whose events would be committed more than {} ms after their timestamp (half the "
                            + "storage engine's gapTimeout, {} ms{}) fails instead, nothing of it stored, so that "
                            + "tracking processors skip no event", deadline.bound.toMillis(), deadline.gapTimeoutMillis,
                    gapTimeout < 2 ? ", Axon's default: the engine's own cannot be read" : "");
        return deadline;
    }

    /** @return how long after its timestamp an event may still be committed */
    Duration bound() {
        return bound;
    }

    /**
     * @param slots a group about to be stored, in ring order
     * @return the first of them with an event stamped more than {@link #bound()} ago, or null when none is. One read
     * of the clock; nothing allocated. Store thread.
     */
    CommandSlot firstLate(List<CommandSlot> slots) {
        // In milliseconds, not Instants: the store thread allocates nothing for the check.
        long oldestAllowed = GenericEventMessage.clock.millis() - bound.toMillis();
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            List<EventMessage<?>> events = slot.events;
            for (int e = 0; e < events.size(); e++) {
                if (events.get(e).getTimestamp().toEpochMilli() < oldestAllowed) {
                    return slot;
                }
            }
        }
        return null;
    }

    /**
     * @param late the command {@link #firstLate} found
     * @return what it fails with
     */
    EventStoreException failure(CommandSlot late) {
        Instant oldest = null;
        for (EventMessage<?> event : late.events) {
            oldest = oldest == null || event.getTimestamp().isBefore(oldest) ? event.getTimestamp() : oldest;
        }
        long age = oldest == null ? 0 : Duration.between(oldest, GenericEventMessage.clock.instant()).toMillis();
        return new EventStoreException(
                "Command [" + late.commandName() + "] failed and nothing of it is stored: its events were applied "
                        + age + " ms ago, and committed now, more than " + bound.toMillis() + " ms after their "
                        + "timestamp (half the storage engine's gapTimeout of " + gapTimeoutMillis + " ms), they could "
                        + "make tracking processors give up on events of other transactions still open. The store "
                        + "was held up (away, short of connections, or slower than the commands came): see the "
                        + "store's failures logged before this one");
    }
}
