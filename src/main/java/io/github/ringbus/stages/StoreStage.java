package io.github.ringbus.stages;

import io.github.ringbus.aggregates.AggregateHolder;
import io.github.ringbus.events.RingEventStore;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import com.lmax.disruptor.EventHandler;

import java.util.ArrayList;
import java.util.List;

/**
 * Stage 3a: appends the events of the commands it has in hand in one call and one transaction per batch.
 * <p>
 * A batch is every handled command the Disruptor hands this stage at once, cut at the configured number of events.
 * The whole batch succeeds or fails: on failure every command of the batch receives the failure, and each affected
 * aggregate's current state is invalidated (see {@link AggregateHolder}), so later commands that built on the lost
 * events fail here too and the next one starts again from what is really stored. One thread.
 * <p>
 * With a {@link RingEventStore} this stage only appends (the publish stage notifies subscribers); with any other
 * {@link EventStore} it calls {@code publish}, which appends and notifies subscribers in one step.
 */
final class StoreStage implements EventHandler<CommandSlot> {

    private final EventStore eventStore;
    private final RingEventStore splitStore;
    private final TransactionManager transactionManager;
    private final int maxBatchEvents;
    private final StoreBatchListener batchListener;

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
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        if (slot.hasEventsToStore()) {
            if (slot.holder.isPoisoned(slot.generation)) {
                slot.storeFailure = new EventStoreException(
                        "Command [" + slot.commandName() + "] was handled on top of events of aggregate ["
                                + slot.holder.identifier() + "] that failed to be stored; it is rejected");
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
            Transaction transaction = transactionManager.startTransaction();
            try {
                append(batchEvents);
                transaction.commit();
            } catch (Throwable failure) {
                transaction.rollback();
                throw failure;
            }
            for (int i = 0; i < batch.size(); i++) {
                CommandSlot slot = batch.get(i);
                slot.holder.storedUpTo(slot.events.get(slot.events.size() - 1).getSequenceNumber());
            }
            if (splitStore != null) {
                splitStore.announceAppended(batchEvents);
            }
            batchListener.appended(batch.size(), batchEvents.size());
        } catch (Throwable failure) {
            for (int i = 0; i < batch.size(); i++) {
                CommandSlot slot = batch.get(i);
                slot.storeFailure = failure;
                slot.holder.invalidate(slot.generation);
            }
        } finally {
            batch.clear();
            batchEvents.clear();
        }
    }

    private void append(List<EventMessage<?>> events) {
        if (splitStore != null) {
            splitStore.appendStaged(events);
        } else {
            eventStore.publish(events);
        }
    }
}
