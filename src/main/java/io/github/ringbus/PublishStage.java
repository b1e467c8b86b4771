package io.github.ringbus;

import com.lmax.disruptor.EventHandler;

import java.util.List;

/**
 * Stage 3b: hands each handled command's events to the event store's subscribers (subscribing event processors), one
 * command at a time, in ring order. One thread.
 * <p>
 * In {@link io.github.ringbus.PublishMode#PARALLEL} it runs beside the store stage; in
 * {@link io.github.ringbus.PublishMode#AFTER_STORE} after it, and skips commands whose append failed. A
 * subscriber's exception is reported to the command's caller; the events stay stored.
 * <p>
 * Tests: {@code behaviour.PublishTest}.
 */
final class PublishStage implements EventHandler<CommandSlot> {

    private final RingEventStore store;
    private final boolean afterStore;

    PublishStage(RingEventStore store, boolean afterStore) {
        this.store = store;
        this.afterStore = afterStore;
    }

    @Override
    public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        if (!slot.hasEventsToStore() || (afterStore && slot.storeFailure != null) || !store.hasSubscribers()) {
            return;
        }
        try {
            // Subscribers may keep the list they are given (an asynchronous processing strategy queues it), and
            // the slot's list is reused: they get a copy of their own.
            store.publishToSubscribers(List.copyOf(slot.events));
        } catch (Throwable failure) {
            slot.publishFailure = failure;
        }
    }
}
