package io.github.ringbus.jdbc;

import org.axonframework.common.jdbc.ConnectionProvider;
import org.axonframework.common.jdbc.ConnectionWrapperFactory;
import org.axonframework.common.jdbc.JdbcException;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.SQLTransactionRollbackException;
import java.util.Objects;
import javax.sql.DataSource;

/**
 * A {@link TransactionManager} for plain JDBC, without Spring: a transaction takes one {@link Connection} from a
 * {@link DataSource} and binds it to the thread that started it, and the {@link #connectionProvider()} hands that
 * very connection to everything that asks for one on that thread while the transaction is active. Give both to
 * Axon's {@code JdbcEventStorageEngine}, and the same transaction manager to the command bus:
 * <pre>
 * JdbcTransactionManager transactions = new JdbcTransactionManager(dataSource);
 * JdbcEventStorageEngine engine = JdbcEventStorageEngine.builder()
 *         .connectionProvider(transactions.connectionProvider())
 *         .transactionManager(transactions)
 *         ...
 * RingCommandBus.builder().eventStore(store).transactionManager(transactions)...
 * </pre>
 * Then the ringbus store stage's transaction holds one connection, every {@code appendEvents} of the engine inside it
 * joins that transaction (the engine opens a transaction of its own around each append, which here participates in
 * the outer one), and the events of a whole batch of commands are committed by one {@code COMMIT}. This is what
 * Spring's {@code DataSourceTransactionManager} with Axon's {@code SpringDataSourceConnectionProvider} do; Axon offers
 * no such pair without Spring.
 * <p>
 * <b>Semantics.</b> The outermost {@link #startTransaction()} on a thread begins a transaction (auto-commit off);
 * a nested one participates: its {@code commit} does nothing, its {@code rollback} marks the transaction
 * rollback-only, so that the outer {@code commit} rolls back and throws. The outer {@code commit} or {@code rollback}
 * ends the transaction, restores auto-commit and closes the connection (returning it to a pool). A transaction must
 * be ended on the thread that started it. Outside a transaction, the connection provider returns a new connection
 * from the data source in auto-commit mode, which the caller closes.
 * <p>
 * <b>Failures.</b> No connection: {@code startTransaction} throws a {@link JdbcException}. A failed {@code ROLLBACK}
 * is logged, not thrown (the caller is handling the failure that made it roll back). A failed {@code COMMIT}
 * throws a {@link JdbcException} and leaves the outcome to the database: PostgreSQL applies a transaction entirely or
 * not at all, but when the connection is lost during {@code COMMIT} the client cannot know which. The connection is
 * closed either way; a pool discards connections that broke.
 * <p>
 * Thread-safe: any number of threads may run transactions at once, each on its own connection. Use a pooling data
 * source: each transaction takes a connection, and a data source without a pool opens a new physical connection each
 * time.
 */
public final class JdbcTransactionManager implements TransactionManager {

    private static final Logger logger = LoggerFactory.getLogger(JdbcTransactionManager.class);

    private final DataSource dataSource;
    private final ThreadLocal<Bound> current = new ThreadLocal<>();
    private final ConnectionProvider connectionProvider = this::connection;
    private final TransactionManager autoCommitReads = this::startAutoCommitScope;

    /**
     * @param dataSource where connections come from; a pooling data source is strongly advised
     */
    public JdbcTransactionManager(DataSource dataSource) {
        this.dataSource = Objects.requireNonNull(dataSource, "dataSource");
    }

    /**
     * @return the provider of the connection of the calling thread's transaction (or, outside one, of a new
     * auto-commit connection); give it to the storage engine together with this transaction manager
     */
    public ConnectionProvider connectionProvider() {
        return connectionProvider;
    }

    /**
     * @return true when the calling thread has a transaction of this manager in progress
     */
    public boolean isTransactionActive() {
        return current.get() != null;
    }

    /**
     * A transaction manager for reads that need no transaction of their own, such as the read of an aggregate's
     * snapshot and events: its transaction takes one connection and binds it to the thread exactly as
     * {@link #startTransaction()} does (so every step of the storage engine inside it, each of which opens a
     * transaction of this manager, shares that one connection), but leaves the connection in auto-commit mode, and
     * its {@code commit} or {@code rollback} only returns the connection. A read of an aggregate so takes one
     * connection and no {@code COMMIT}: one round trip to the database fewer than in a transaction.
     * <p>
     * Each statement sees what was committed before it began, as it would inside a transaction at PostgreSQL's default
     * isolation level (READ COMMITTED), where every statement takes a fresh snapshot too. What is written inside it
     * is committed statement by statement: use it for reads only. A transaction of this manager already active on
     * the thread is joined, as by {@link #startTransaction()}.
     * <p>
     * Give it to {@code RingCommandBus.builder().readTransactionManager(...)}, beside this manager as its
     * {@code transactionManager}.
     *
     * @return the transaction manager for reads in auto-commit mode on one connection
     */
    public TransactionManager autoCommitReads() {
        return autoCommitReads;
    }

    @Override
    public Transaction startTransaction() {
        return start(true);
    }

    private Transaction startAutoCommitScope() {
        return start(false);
    }

    private Transaction start(boolean transactional) {
        Bound bound = current.get();
        if (bound != null) {
            return bound.participant;
        }
        Connection connection = null;
        try {
            connection = dataSource.getConnection();
            boolean autoCommit = connection.getAutoCommit();
            if (autoCommit == transactional) {
                connection.setAutoCommit(!transactional);
            }
            bound = new Bound(connection, autoCommit, transactional);
        } catch (SQLException | RuntimeException e) {
            closeQuietly(connection, e);
            throw new JdbcException("Could not start a database transaction: " + e.getMessage(), e);
        }
        current.set(bound);
        return bound;
    }

    private Connection connection() throws SQLException {
        Bound bound = current.get();
        return bound != null ? bound.shared : dataSource.getConnection();
    }

    private static void closeQuietly(Connection connection, Throwable failure) {
        if (connection == null) {
            return;
        }
        try {
            connection.close();
        } catch (SQLException | RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /**
     * The outer transaction of one thread: owns the connection. Its thread only (a transaction must be ended on the
     * thread that started it).
     */
    private final class Bound implements Transaction {

        private final Connection connection;
        /** The auto-commit mode the connection had when it was taken, given back to it at the end. */
        private final boolean autoCommitBefore;
        /** False for a scope of {@link #autoCommitReads()}: the connection stays in auto-commit, nothing commits. */
        private final boolean transactional;
        /** The connection as handed out by the provider: closing or committing it is left to this transaction. */
        private final Connection shared;
        private final Transaction participant = new Participant();
        private boolean rollbackOnly;
        private boolean ended;

        Bound(Connection connection, boolean autoCommitBefore, boolean transactional) {
            this.connection = connection;
            this.autoCommitBefore = autoCommitBefore;
            this.transactional = transactional;
            this.shared = ConnectionWrapperFactory.wrap(connection, new ConnectionWrapperFactory.NoOpCloseHandler());
        }

        @Override
        public void commit() {
            if (!begin()) {
                return;
            }
            if (!transactional) {
                release(null); // auto-commit: each statement committed itself
                return;
            }
            JdbcException failure = null;
            try {
                if (rollbackOnly) {
                    connection.rollback();
                    // SQLState 40000 (transaction rollback): whoever reads the failure knows nothing was committed.
                    failure = new JdbcException(
                            "The transaction was rolled back: a part of it failed and marked it rollback-only",
                            new SQLTransactionRollbackException("rolled back: marked rollback-only", "40000"));
                } else {
                    connection.commit();
                }
            } catch (SQLException | RuntimeException e) {
                failure = new JdbcException(
                        "Could not commit the database transaction (if the connection was lost during the commit, "
                                + "the database may or may not have applied it): " + e.getMessage(), e);
                try {
                    connection.rollback();
                } catch (SQLException | RuntimeException rollbackFailure) {
                    failure.addSuppressed(rollbackFailure);
                }
            }
            release(failure);
            if (failure != null) {
                throw failure;
            }
        }

        @Override
        public void rollback() {
            if (!begin()) {
                return;
            }
            if (!transactional) {
                release(null); // auto-commit: nothing to roll back
                return;
            }
            JdbcException failure = null;
            try {
                if (!connection.isClosed()) {
                    connection.rollback();
                }
            } catch (SQLException | RuntimeException e) {
                // Not rethrown: the caller is already handling the failure that made it roll back, and a lost
                // connection has nothing left to roll back (PostgreSQL aborts a transaction whose session ends).
                failure = new JdbcException("Could not roll back the database transaction: " + e.getMessage(), e);
            }
            release(failure);
            if (failure != null) {
                logger.warn("Rollback failed; the connection was closed: {}", failure.getMessage());
                logger.debug("Rollback failure", failure);
            }
        }

        /** Unbinds this transaction from the thread; false when it had already ended. */
        private boolean begin() {
            if (ended) {
                return false;
            }
            ended = true;
            current.remove();
            return true;
        }

        /**
         * Restores the connection's auto-commit mode and closes it; what fails here is added to {@code failure}, if
         * any.
         */
        private void release(Throwable failure) {
            try {
                if (autoCommitBefore == transactional && !connection.isClosed()) {
                    connection.setAutoCommit(autoCommitBefore);
                }
            } catch (SQLException | RuntimeException e) {
                if (failure != null) {
                    failure.addSuppressed(e);
                }
            }
            try {
                connection.close();
            } catch (SQLException | RuntimeException e) {
                if (failure != null) {
                    failure.addSuppressed(e);
                }
            }
        }

        /** A transaction started while this one is active on the same thread: joins it. */
        private final class Participant implements Transaction {

            @Override
            public void commit() {
                // The outer transaction commits.
            }

            @Override
            public void rollback() {
                rollbackOnly = true;
            }
        }
    }
}
