package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import org.axonframework.common.transaction.Transaction;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link JdbcTransactionManager#autoCommitReads()} on a real PostgreSQL: one connection per scope, shared by every
 * step on the thread, in auto-commit mode (no transaction, nothing to commit), handed back as it was taken.
 */
class AutoCommitReadsTest extends OnPostgres {

    private HikariDataSource pool;
    private JdbcTransactionManager transactions;

    @BeforeEach
    void onePooledConnection() throws SQLException {
        // One connection in the pool: whatever a scope changes on it, the next borrower sees.
        pool = PostgresServer.pool(server.jdbcUrl(), 1);
        transactions = new JdbcTransactionManager(pool);
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement()) {
            statement.execute("CREATE TABLE IF NOT EXISTS read_scope_note (note TEXT)");
            statement.execute("TRUNCATE read_scope_note");
        }
    }

    @AfterEach
    void closePool() {
        pool.close();
    }

    @Test
    void everyStepInAReadScopeGetsTheSameConnectionInAutoCommitMode() throws SQLException {
        Transaction scope = transactions.autoCommitReads().startTransaction();
        try {
            Connection first = transactions.connectionProvider().getConnection();
            Connection second = transactions.connectionProvider().getConnection();

            assertThat(backendOf(second)).isEqualTo(backendOf(first));
            assertThat(first.getAutoCommit()).isTrue();
            assertThat(transactions.isTransactionActive()).isTrue();
        } finally {
            scope.commit();
        }
        assertThat(transactions.isTransactionActive()).isFalse();
    }

    @Test
    void aReadScopeRunsNoDatabaseTransaction() throws Exception {
        Transaction scope = transactions.autoCommitReads().startTransaction();
        try {
            Connection connection = transactions.connectionProvider().getConnection();
            String first = transactionStart(connection);
            Thread.sleep(20);
            String second = transactionStart(connection);
            // Inside a transaction now() stays at the transaction's start; here each statement starts its own.
            assertThat(second).as("now() of two statements 20 ms apart").isNotEqualTo(first);
            execute(connection, "INSERT INTO read_scope_note VALUES ('written in a read scope')");
        } finally {
            scope.rollback(); // nothing to roll back: the insert committed by itself
        }
        assertThat(notes()).isEqualTo(1);
    }

    @Test
    void aTransactionStartedInsideAReadScopeJoinsItsConnection() throws SQLException {
        Transaction scope = transactions.autoCommitReads().startTransaction();
        try {
            long scopeBackend = backendOf(transactions.connectionProvider().getConnection());
            Transaction joined = transactions.startTransaction();
            long joinedBackend = backendOf(transactions.connectionProvider().getConnection());
            joined.commit();

            assertThat(joinedBackend).isEqualTo(scopeBackend);
            assertThat(transactions.isTransactionActive()).as("the scope outlives the joined transaction").isTrue();
        } finally {
            scope.commit();
        }
    }

    @Test
    void aReadScopeGivesItsConnectionBackInTheModeItWasTaken() throws SQLException {
        pool.close();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(server.jdbcUrl());
        config.setMaximumPoolSize(1);
        config.setAutoCommit(false); // a pool whose connections come out of auto-commit
        pool = new HikariDataSource(config);
        transactions = new JdbcTransactionManager(pool);

        Transaction scope = transactions.autoCommitReads().startTransaction();
        boolean inScope = transactions.connectionProvider().getConnection().getAutoCommit();
        scope.commit();

        assertThat(inScope).isTrue();
        try (Connection next = pool.getConnection()) {
            assertThat(next.getAutoCommit()).isFalse();
        }
    }

    @Test
    void aTransactionAfterAReadScopeIsATransactionAgain() throws SQLException {
        transactions.autoCommitReads().startTransaction().commit();

        Transaction transaction = transactions.startTransaction();
        execute(transactions.connectionProvider().getConnection(),
                "INSERT INTO read_scope_note VALUES ('rolled back')");
        transaction.rollback();

        assertThat(notes()).isZero();
    }

    private static long backendOf(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
             ResultSet backend = statement.executeQuery("SELECT pg_backend_pid()")) {
            backend.next();
            return backend.getLong(1);
        }
    }

    private static String transactionStart(Connection connection) throws SQLException {
        try (Statement statement = connection.createStatement();
             ResultSet start = statement.executeQuery("SELECT now()::text")) {
            start.next();
            return start.getString(1);
        }
    }

    private static void execute(Connection connection, String sql) throws SQLException {
        try (Statement statement = connection.createStatement()) {
            statement.execute(sql);
        }
    }

    private long notes() throws SQLException {
        try (Connection connection = pool.getConnection(); Statement statement = connection.createStatement();
             ResultSet count = statement.executeQuery("SELECT count(*) FROM read_scope_note")) {
            count.next();
            return count.getLong(1);
        }
    }
}
