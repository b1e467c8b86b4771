package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountEvents;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import io.github.ringbus.PipelineMonitor;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.serialization.Serializer;
import org.postgresql.ds.PGSimpleDataSource;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * A started ringbus with {@link Account} on Axon's {@link JdbcEventStorageEngine} over a connection pool of the given
 * server, group-committing through a {@link JdbcTransactionManager} and reading its aggregates in its
 * {@link JdbcTransactionManager#autoCommitReads()}, as docs/postgres.md sets it up. It counts the store stage's
 * transactions and records every batch the store stage appended.
 */
final class PostgresRing implements AutoCloseable {

    final HikariDataSource pool;
    final JdbcTransactionManager transactions;
    final CountingTransactionManager storeTransactions;
    final PostgresServer.ReadCountingEngine engine;
    final RingEventStore eventStore;
    final RingCommandBus bus;
    /** Every batch the store stage committed: {commands, events}. */
    final ConcurrentLinkedQueue<int[]> batches = new ConcurrentLinkedQueue<>();
    /** Commands that reached the handler (whatever it did); counted on the handler threads. */
    final AtomicInteger handled = new AtomicInteger();
    /** Connections taken from the pool through the transaction manager, by the name of the thread that took each. */
    final java.util.Map<String, AtomicInteger> connectionsTaken = new java.util.concurrent.ConcurrentHashMap<>();
    /** {@code COMMIT}s sent on connections of the pool, by the name of the thread that sent each. */
    final java.util.Map<String, AtomicInteger> commitsSent = new java.util.concurrent.ConcurrentHashMap<>();

    PostgresRing(PostgresServer server) {
        this(server, null, b -> b);
    }

    PostgresRing(PostgresServer server, PostgresServer.AppendHook hook,
                 UnaryOperator<RingCommandBus.Builder> settings) {
        this(server, hook, PostgresServer.SERIALIZER, settings);
    }

    PostgresRing(PostgresServer server, PostgresServer.AppendHook hook, Serializer serializer,
                 UnaryOperator<RingCommandBus.Builder> settings) {
        this(server, hook, serializer, settings, true, pool -> pool);
    }

    /**
     * A ring whose bus reads its aggregates in transactions of {@link #storeTransactions}, the bus's default when no
     * {@code readTransactionManager} is given (the others read in {@link JdbcTransactionManager#autoCommitReads()},
     * as docs/postgres.md sets it up).
     */
    static PostgresRing readingInTransactions(PostgresServer server, UnaryOperator<RingCommandBus.Builder> settings) {
        return new PostgresRing(server, null, PostgresServer.SERIALIZER, settings, false, pool -> pool);
    }

    /** A ring with default settings whose every connection is taken through {@code connections} (a wrapper). */
    static PostgresRing through(PostgresServer server, UnaryOperator<javax.sql.DataSource> connections) {
        return new PostgresRing(server, null, PostgresServer.SERIALIZER, b -> b, true, connections);
    }

    private PostgresRing(PostgresServer server, PostgresServer.AppendHook hook, Serializer serializer,
                         UnaryOperator<RingCommandBus.Builder> settings, boolean autoCommitReads,
                         UnaryOperator<javax.sql.DataSource> connections) {
        this.pool = server.pool(8);
        this.transactions = new JdbcTransactionManager(
                countingConnections(connections.apply(pool), connectionsTaken, commitsSent));
        this.storeTransactions = new CountingTransactionManager(transactions);
        this.engine = PostgresServer.engine(transactions, hook, serializer);
        this.eventStore = RingEventStore.builder().storageEngine(engine).build();
        PipelineMonitor monitor = new PipelineMonitor() {
            @Override
            public void appended(int commands, int events) {
                batches.add(new int[]{commands, events});
            }
        };
        this.bus = settings.apply(RingCommandBus.builder()
                                                .eventStore(eventStore)
                                                .transactionManager(storeTransactions)
                                                .handlerThreads(2)
                                                .pipelineMonitor(monitor)
                                                .readTransactionManager(autoCommitReads ? transactions.autoCommitReads()
                                                                                        : storeTransactions)
                                                .handlerInterceptor((unitOfWork, chain) -> {
                                                    try {
                                                        return chain.proceed();
                                                    } finally {
                                                        handled.incrementAndGet();
                                                    }
                                                }))
                           .build();
        bus.registerAggregate(Account.class);
        bus.start();
    }

    /** Dispatches and returns the callback's result as a future; a second call of the callback fails the test. */
    @SuppressWarnings("unchecked")
    CompletableFuture<CommandResultMessage<Object>> send(Object command) {
        CompletableFuture<CommandResultMessage<Object>> result = new CompletableFuture<>();
        bus.dispatch(asCommandMessage(command), (message, resultMessage) -> {
            if (!result.complete((CommandResultMessage<Object>) resultMessage)) {
                throw new AssertionError("Callback of " + command + " called twice");
            }
        });
        return result;
    }

    CommandResultMessage<Object> sendAndWait(Object command) {
        try {
            return send(command).get(30, TimeUnit.SECONDS);
        } catch (Exception e) {
            throw new AssertionError("No result for " + command, e);
        }
    }

    /** Waits until the handlers have seen {@code count} commands in total. */
    void awaitHandled(int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (handled.get() < count) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Only " + handled.get() + " of " + count + " commands were handled");
            }
            Thread.sleep(1);
        }
    }

    List<int[]> batches() {
        return new ArrayList<>(batches);
    }

    @Override
    public void close() {
        bus.shutdown();
        eventStore.shutDown();
        pool.close();
    }

    // --- a reader of its own -----------------------------------------------------------------------------------------

    /**
     * The events of an aggregate as a fresh reader sees them: a new storage engine on new connections, outside any
     * pool and cache of the bus.
     */
    static List<DomainEventMessage<?>> readFresh(PostgresServer server, String aggregateId) {
        PGSimpleDataSource dataSource = new PGSimpleDataSource();
        dataSource.setUrl(server.jdbcUrl());
        JdbcEventStorageEngine reader = PostgresServer.engine(new JdbcTransactionManager(dataSource));
        return reader.readEvents(aggregateId).asStream().collect(Collectors.toList());
    }

    /** The amounts of the deposits a fresh reader finds for an account, in sequence order. */
    static List<Long> storedDeposits(PostgresServer server, String accountId) {
        return readFresh(server, accountId).stream()
                                           .map(DomainEventMessage::getPayload)
                                           .filter(p -> p instanceof AccountEvents.Deposited)
                                           .map(p -> ((AccountEvents.Deposited) p).amount())
                                           .collect(Collectors.toList());
    }

    /** The pool, counting the connections each thread takes from it and the commits each sends on them. */
    private static javax.sql.DataSource countingConnections(javax.sql.DataSource pool,
                                                            java.util.Map<String, AtomicInteger> taken,
                                                            java.util.Map<String, AtomicInteger> commits) {
        return (javax.sql.DataSource) java.lang.reflect.Proxy.newProxyInstance(
                PostgresRing.class.getClassLoader(), new Class<?>[]{javax.sql.DataSource.class},
                (proxy, method, arguments) -> {
                    Object result = invoke(pool, method, arguments);
                    if (!method.getName().equals("getConnection")) {
                        return result;
                    }
                    countByThread(taken);
                    java.sql.Connection connection = (java.sql.Connection) result;
                    return java.lang.reflect.Proxy.newProxyInstance(
                            PostgresRing.class.getClassLoader(), new Class<?>[]{java.sql.Connection.class},
                            (connectionProxy, connectionMethod, connectionArguments) -> {
                                if (connectionMethod.getName().equals("commit") && !connection.getAutoCommit()) {
                                    countByThread(commits);
                                }
                                return invoke(connection, connectionMethod, connectionArguments);
                            });
                });
    }

    private static void countByThread(java.util.Map<String, AtomicInteger> counts) {
        counts.computeIfAbsent(Thread.currentThread().getName(), t -> new AtomicInteger()).incrementAndGet();
    }

    private static Object invoke(Object target, java.lang.reflect.Method method, Object[] arguments)
            throws Throwable {
        try {
            return method.invoke(target, arguments);
        } catch (java.lang.reflect.InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /**
     * Counts the transactions it starts and commits (the store stage's, when given to the bus), and runs an optional
     * action just before each commit.
     */
    static final class CountingTransactionManager implements TransactionManager {

        private final TransactionManager delegate;
        final AtomicInteger started = new AtomicInteger();
        final AtomicInteger committed = new AtomicInteger();
        volatile Runnable beforeCommit;

        CountingTransactionManager(TransactionManager delegate) {
            this.delegate = delegate;
        }

        /**
         * Counts (and runs {@link #beforeCommit} in) the store stage's transactions only: the bus also reads each
         * missing aggregate in a transaction of this manager, on other threads.
         */
        @Override
        public Transaction startTransaction() {
            Transaction transaction = delegate.startTransaction();
            if (!Thread.currentThread().getName().contains("-store")) {
                return transaction;
            }
            started.incrementAndGet();
            return new Transaction() {
                @Override
                public void commit() {
                    Runnable action = beforeCommit;
                    if (action != null) {
                        action.run();
                    }
                    transaction.commit();
                    committed.incrementAndGet();
                }

                @Override
                public void rollback() {
                    transaction.rollback();
                }
            };
        }
    }
}
