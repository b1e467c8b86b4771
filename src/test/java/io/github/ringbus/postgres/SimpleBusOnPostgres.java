package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;

import javax.sql.DataSource;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * The twin of a {@link PostgresRing}: {@link Account} on Axon's own {@code SimpleCommandBus} and an event-sourcing
 * repository that reads the aggregate at every command, on the same storage engine, pool size and transactions, each
 * command in a transaction of its own on the dispatching thread.
 */
final class SimpleBusOnPostgres implements AutoCloseable {

    private final HikariDataSource pool;
    private final EmbeddedEventStore eventStore;
    private final SimpleCommandBus bus;

    SimpleBusOnPostgres(PostgresServer server) {
        this(server, connections -> connections);
    }

    /** @param connections wraps the pool the bus takes every connection from */
    SimpleBusOnPostgres(PostgresServer server, UnaryOperator<DataSource> connections) {
        this.pool = server.pool(8);
        JdbcTransactionManager transactions = new JdbcTransactionManager(connections.apply(pool));
        this.eventStore = EmbeddedEventStore.builder().storageEngine(PostgresServer.engine(transactions)).build();
        this.bus = SimpleCommandBus.builder().transactionManager(transactions).build();
        AggregateAnnotationCommandHandler.<Account>builder()
                                         .aggregateType(Account.class)
                                         .repository(EventSourcingRepository.builder(Account.class)
                                                                            .eventStore(eventStore)
                                                                            .build())
                                         .build()
                                         .subscribe(bus);
    }

    /** Dispatches on the calling thread; the callback's result as a future. */
    @SuppressWarnings("unchecked")
    /** @return the pool the bus takes its connections from */
    HikariDataSource pool() {
        return pool;
    }

    CompletableFuture<CommandResultMessage<Object>> send(Object command) {
        CompletableFuture<CommandResultMessage<Object>> result = new CompletableFuture<>();
        bus.dispatch(asCommandMessage(command),
                     (message, resultMessage) -> result.complete((CommandResultMessage<Object>) resultMessage));
        return result;
    }

    @Override
    public void close() {
        eventStore.shutDown();
        pool.close();
    }
}
