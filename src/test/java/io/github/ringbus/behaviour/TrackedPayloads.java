package io.github.ringbus.behaviour;

import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.eventhandling.EventHandler;
import org.axonframework.eventhandling.SimpleEventHandlerInvoker;
import org.axonframework.eventhandling.TrackingEventProcessor;
import org.axonframework.eventhandling.TrackingEventProcessorConfiguration;
import org.axonframework.eventhandling.tokenstore.inmemory.InMemoryTokenStore;
import org.axonframework.eventsourcing.eventstore.EventStore;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * Axon's real {@link TrackingEventProcessor} on an event store, from its first event, recording every payload it
 * handles: what a tracking processor sees is what the store committed.
 */
final class TrackedPayloads implements AutoCloseable {

    private final List<Object> payloads = new CopyOnWriteArrayList<>();
    private final TrackingEventProcessor processor;

    TrackedPayloads(EventStore eventStore) {
        Object handler = new Object() {
            @EventHandler
            void on(Object payload) {
                payloads.add(payload);
            }
        };
        this.processor = TrackingEventProcessor.builder()
                                               .name("tracked-payloads")
                                               .eventHandlerInvoker(SimpleEventHandlerInvoker.builder()
                                                                                             .eventHandlers(handler)
                                                                                             .build())
                                               .messageSource(eventStore)
                                               .tokenStore(new InMemoryTokenStore())
                                               .transactionManager(NoTransactionManager.INSTANCE)
                                               .trackingEventProcessorConfiguration(
                                                       TrackingEventProcessorConfiguration.forSingleThreadedProcessing())
                                               .build();
        processor.start();
    }

    /** Waits (at most 10 s) until the processor has handled the payload, then returns everything it handled. */
    List<Object> awaitThrough(Object payload) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!payloads.contains(payload)) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("the tracking processor never handled " + payload + "; it has " + payloads);
            }
            Thread.sleep(5);
        }
        return List.copyOf(payloads);
    }

    @Override
    public void close() {
        processor.shutDown();
    }
}
