package io.github.ringbus;

import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.SnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.unitofwork.RollbackConfiguration;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.monitoring.MessageMonitor;

import java.time.Duration;
import java.util.List;

/**
 * Everything a bus is built from, as {@link RingCommandBus.Builder#build()} validated it: the one copy of the
 * configuration, read by the bus and its pipeline alike. Immutable (the interceptor lists are copies; interceptors
 * registered on a running bus go to the bus's own lists).
 *
 * @param readTransactionManager    what each read of an aggregate from the store runs in
 * @param spanFactory               null unless tracing was configured: without it nothing is allocated for spans
 * @param snapshotTriggerDefinition the bus's trigger, for aggregates without their own
 * @param databaseLatency           the round trip to the database as given to the builder, or null
 */
record RingSettings(EventStore eventStore,
                    int ringSize,
                    int handlerThreads,
                    int storeThreads,
                    Topology topology,
                    WaitStrategyChoice waitStrategy,
                    FullRingPolicy fullRingPolicy,
                    Duration fullRingTimeout,
                    PublishMode publishMode,
                    int cacheSize,
                    int readAheadThreads,
                    int maxStoreBatchEvents,
                    CommandTargetResolver commandTargetResolver,
                    TransactionManager transactionManager,
                    TransactionManager readTransactionManager,
                    RollbackConfiguration rollbackConfiguration,
                    MessageMonitor<? super CommandMessage<?>> messageMonitor,
                    SnapshotTriggerDefinition snapshotTriggerDefinition,
                    List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors,
                    List<MessageHandlerInterceptor<? super CommandMessage<?>>> handlerInterceptors,
                    String threadNamePrefix,
                    Duration shutdownTimeout,
                    PipelineMonitor pipelineMonitor,
                    CommandBusSpanFactory spanFactory,
                    Duration databaseLatency) {

    RingSettings {
        dispatchInterceptors = List.copyOf(dispatchInterceptors);
        handlerInterceptors = List.copyOf(handlerInterceptors);
    }

    /** One line that says which bus runs and how, for the log at start-up. */
    String describe() {
        return "ringbus RingCommandBus started: topology " + topology + ", " + handlerThreads + " handler thread(s), "
                + storeThreads + " store thread(s) (" + threadNamePrefix + "-*), wait strategy " + waitStrategy + ", publish mode " + publishMode
                + ", store batches of up to " + maxStoreBatchEvents + " events per transaction ("
                + transactionManager.getClass().getSimpleName() + "), ring of " + ringSize + " slots, "
                + fullRingPolicy + " when full, cache of " + cacheSize + " aggregates per type (" + readAheadThreads
                + " thread(s) reading missing ones ahead), event store "
                + eventStore.getClass().getSimpleName();
    }

    /**
     * @return the event store when it is a {@link RingEventStore} (store and publish are then separate steps), else
     * null: the one place this is decided
     */
    RingEventStore splitStore() {
        return eventStore instanceof RingEventStore ringEventStore ? ringEventStore : null;
    }
}
