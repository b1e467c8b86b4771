package io.github.ringbus.benchmarks;

import java.util.function.Supplier;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;

/**
 * Where a {@link BankApplication} stores its events: a storage engine for its event store, and the transaction
 * manager that the application's command bus runs commands in.
 *
 * @param engine       makes the storage engine, once per application
 * @param transactions the application's transaction manager
 */
public record EventStorage(Supplier<EventStorageEngine> engine, TransactionManager transactions) {

    /** Axon's {@link InMemoryEventStorageEngine}, no transactions: the embedded default. */
    public static EventStorage inMemory() {
        return new EventStorage(InMemoryEventStorageEngine::new, NoTransactionManager.INSTANCE);
    }
}
