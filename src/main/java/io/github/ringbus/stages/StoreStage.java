package io.github.ringbus.stages;

import io.github.ringbus.aggregates.AggregateHolder;
import io.github.ringbus.events.RingEventStore;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.axonframework.modelling.command.AggregateStreamCreationException;
import org.axonframework.modelling.command.ConcurrencyException;
import org.axonframework.serialization.SerializationException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import com.lmax.disruptor.EventHandler;

import java.sql.SQLException;
import java.sql.SQLNonTransientConnectionException;
import java.sql.SQLRecoverableException;
import java.sql.SQLTransientConnectionException;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * Stage 3a: appends the events of the commands it has in hand in one call and one transaction per batch (group
 * commit).
 * <p>
 * A batch is every handled command the Disruptor hands this stage at once, cut at the configured number of events.
 * Without failure a batch costs exactly one append and one commit, and its commands complete after the commit
 * returned (the complete stage runs after this one).
 * <p>
 * <b>Failure of a batch.</b> The transaction is rolled back, and what happens next depends on the failure:
 * <ul>
 *     <li>A failure of the data of some command ({@linkplain #isolatable isolatable}): a unique-key or other
 *     integrity violation, e.g. another writer appended to an aggregate behind ringbus's back, a data exception, a
 *     serialization failure. The batch is <em>isolated</em>: it is split in halves, and each half is appended in a
 *     fresh transaction of its own, in ring order, halving again whatever fails, until the commands that fail on
 *     their own are found. Only those fail (with the failure their own append raised); everything else of the batch
 *     is committed. A batch of n commands with k conflicting ones costs about 2k&middot;log2(n) transactions.</li>
 *     <li>Any other failure (no connection, connection lost, failed commit, server shutting down, deadlock,
 *     timeout, ...): every command of the batch fails with it. The batch was one transaction, so nothing of it is
 *     half-written.</li>
 * </ul>
 * Each failed command's aggregate has its current <em>generation</em> invalidated (see {@link AggregateHolder}):
 * later commands that built on the lost events fail here too, including those of the same batch that are still to be
 * isolated (they are checked before every attempt), and the next command of the aggregate starts again from what is
 * really stored. No state outlives a batch: once the database is reachable again the next batch simply succeeds.
 * <p>
 * One thread. With a {@link RingEventStore} this stage only appends (the publish stage notifies subscribers); with any
 * other {@link EventStore} it calls {@code publish}, which appends and notifies subscribers in one step.
 */
final class StoreStage implements EventHandler<CommandSlot> {

    private static final Logger logger = LoggerFactory.getLogger(StoreStage.class);

    private final EventStore eventStore;
    private final RingEventStore splitStore;
    private final TransactionManager transactionManager;
    private final int maxBatchEvents;
    private final StoreBatchListener batchListener;
    /** Axon's in-memory engine behind a plain event store: publish event by event (see OneByOnePublish). */
    private final boolean publishOneByOne;

    // Reused for every batch: the hot path allocates no lists of its own.
    private final ArrayList<CommandSlot> batch = new ArrayList<>();
    private final ArrayList<EventMessage<?>> batchEvents = new ArrayList<>();

    StoreStage(EventStore eventStore, TransactionManager transactionManager, int maxBatchEvents,
               StoreBatchListener batchListener) {
        this.eventStore = eventStore;
        this.splitStore = eventStore instanceof RingEventStore ? (RingEventStore) eventStore : null;
        this.transactionManager = transactionManager;
        this.maxBatchEvents = maxBatchEvents;
        this.batchListener = batchListener;
        this.publishOneByOne = splitStore == null && OneByOnePublish.needed(eventStore);
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        if (slot.hasEventsToStore()) {
            if (slot.holder.isPoisoned(slot.generation)) {
                slot.storeFailure = poisoned(slot);
            } else {
                batch.add(slot);
                List<DomainEventMessage<?>> events = slot.events;
                for (int i = 0; i < events.size(); i++) {
                    batchEvents.add(events.get(i));
                }
                if (batchEvents.size() >= maxBatchEvents) {
                    flush();
                }
            }
        }
        if (endOfBatch) {
            flush();
        }
    }

    private void flush() {
        if (batch.isEmpty()) {
            return;
        }
        try {
            Throwable failure = appendInOneTransaction(batchEvents);
            if (failure == null) {
                stored(batch, batchEvents);
            } else if (batch.size() > 1 && isolatable(failure)) {
                isolate(new ArrayList<>(batch));
            } else {
                fail(batch, failure);
            }
        } finally {
            batch.clear();
            batchEvents.clear();
        }
    }

    /**
     * Finds the commands of a failed batch that fail on their own, in ring order: appends each group in a
     * transaction of its own and halves the groups that fail, skipping commands whose aggregate was invalidated
     * meanwhile. A failure that is not isolatable fails every command not yet committed.
     */
    private void isolate(List<CommandSlot> failedBatch) {
        ArrayDeque<List<CommandSlot>> groups = new ArrayDeque<>();
        int half = failedBatch.size() / 2;
        groups.add(failedBatch.subList(0, half));
        groups.add(failedBatch.subList(half, failedBatch.size()));
        List<EventMessage<?>> events = new ArrayList<>();
        while (!groups.isEmpty()) {
            List<CommandSlot> group = live(groups.pollFirst());
            if (group.isEmpty()) {
                continue;
            }
            events.clear();
            for (CommandSlot slot : group) {
                events.addAll(slot.events);
            }
            Throwable failure = appendInOneTransaction(events);
            if (failure == null) {
                stored(group, events);
            } else if (!isolatable(failure)) {
                fail(group, failure);
                for (List<CommandSlot> rest : groups) {
                    fail(live(rest), failure);
                }
                return;
            } else if (group.size() == 1) {
                fail(group, failure);
            } else {
                int middle = group.size() / 2;
                groups.addFirst(group.subList(middle, group.size()));
                groups.addFirst(group.subList(0, middle));
            }
        }
    }

    /** The commands of a group whose aggregate has not been invalidated; the others fail here. */
    private List<CommandSlot> live(List<CommandSlot> group) {
        List<CommandSlot> live = new ArrayList<>(group.size());
        for (CommandSlot slot : group) {
            if (slot.holder.isPoisoned(slot.generation)) {
                slot.storeFailure = poisoned(slot);
            } else {
                live.add(slot);
            }
        }
        return live;
    }

    /**
     * Appends the events and commits, in one transaction.
     *
     * @return null when committed, else the failure (the transaction was rolled back or never began)
     */
    private Throwable appendInOneTransaction(List<EventMessage<?>> events) {
        Transaction transaction;
        try {
            transaction = transactionManager.startTransaction();
        } catch (Throwable failure) {
            return failure;
        }
        try {
            append(events);
        } catch (Throwable failure) {
            try {
                transaction.rollback();
            } catch (Throwable rollbackFailure) {
                failure.addSuppressed(rollbackFailure);
            }
            return failure;
        }
        try {
            transaction.commit();
        } catch (Throwable failure) {
            return failure;
        }
        return null;
    }

    /** The events of these commands are committed: record it, wake tracking processors, tell the listener. */
    private void stored(List<CommandSlot> slots, List<EventMessage<?>> events) {
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            slot.holder.storedUpTo(lastSequenceNumber(slot));
        }
        try {
            if (splitStore != null) {
                splitStore.announceAppended(events);
            }
            batchListener.appended(slots.size(), events.size());
        } catch (RuntimeException e) {
            // The events are committed: the commands succeeded whatever a notification does.
            logger.warn("Notification after appending {} events failed", events.size(), e);
        }
    }

    private static void fail(List<CommandSlot> slots, Throwable failure) {
        for (int i = 0; i < slots.size(); i++) {
            CommandSlot slot = slots.get(i);
            slot.storeFailure = failure;
            slot.holder.invalidate(slot.generation);
        }
    }

    private static long lastSequenceNumber(CommandSlot slot) {
        return slot.events.get(slot.events.size() - 1).getSequenceNumber();
    }

    private static EventStoreException poisoned(CommandSlot slot) {
        return new EventStoreException(
                "Command [" + slot.commandName() + "] was handled on top of events of aggregate ["
                        + slot.holder.identifier() + "] that failed to be stored; it is rejected");
    }

    private void append(List<EventMessage<?>> events) {
        if (splitStore != null) {
            splitStore.appendStaged(events);
        } else if (publishOneByOne) {
            OneByOnePublish.publish(eventStore, events);
        } else {
            eventStore.publish(events);
        }
    }

    /**
     * Whether a failed append is caused by the data of some of its commands, so that appending the commands apart
     * tells the guilty from the innocent: an integrity violation (SQLState class 23, e.g. a duplicate aggregate
     * identifier and sequence number) or data exception (class 22) reported by the database, Axon's
     * {@link ConcurrencyException} or {@link AggregateStreamCreationException}, or a {@link SerializationException}.
     * A failure that also shows a lost or refused connection (class 08, a connection exception type), an operator
     * intervention such as a terminated session or a shutting down server (class 57), a transaction rollback by the
     * server (class 40: deadlock, serialization failure) or exhausted resources (class 53) is not isolatable: the
     * whole batch fails with it.
     *
     * @param failure what an append threw
     * @return true to isolate the batch's commands, false to fail them all
     */
    static boolean isolatable(Throwable failure) {
        boolean dataFailure = false;
        Set<Throwable> seen = Collections.newSetFromMap(new IdentityHashMap<>());
        ArrayDeque<Throwable> pending = new ArrayDeque<>();
        pending.add(failure);
        while (!pending.isEmpty() && seen.size() < 64) {
            Throwable t = pending.poll();
            if (!seen.add(t)) {
                continue;
            }
            if (t instanceof SQLException) {
                SQLException sqlException = (SQLException) t;
                if (t instanceof SQLTransientConnectionException || t instanceof SQLNonTransientConnectionException
                        || t instanceof SQLRecoverableException) {
                    return false;
                }
                String state = sqlException.getSQLState();
                if (state != null && state.length() >= 2) {
                    String stateClass = state.substring(0, 2);
                    switch (stateClass) {
                        case "08":
                        case "40":
                        case "53":
                        case "57":
                            return false;
                        case "22":
                        case "23":
                            dataFailure = true;
                            break;
                        default:
                            break;
                    }
                }
                if (sqlException.getNextException() != null) {
                    pending.add(sqlException.getNextException());
                }
            } else if (t instanceof ConcurrencyException || t instanceof AggregateStreamCreationException
                    || t instanceof SerializationException) {
                dataFailure = true;
            }
            if (t.getCause() != null) {
                pending.add(t.getCause());
            }
        }
        return dataFailure;
    }
}
