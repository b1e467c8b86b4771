package io.github.ringbus.postgres;

import io.github.ringbus.jpa.ByteaPostgreSQLDialect;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import jakarta.persistence.EntityTransaction;
import javax.sql.DataSource;
import org.axonframework.common.jpa.EntityManagerProvider;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.jpa.DomainEventEntry;
import org.axonframework.eventsourcing.eventstore.jpa.SnapshotEventEntry;
import org.hibernate.SessionFactory;
import org.hibernate.boot.model.naming.CamelCaseToUnderscoresNamingStrategy;
import org.hibernate.cfg.AvailableSettings;
import org.hibernate.cfg.Configuration;

/**
 * Hibernate as Spring Boot configures it for Axon's JPA entities (Boot's table and column names), on a pool, its
 * tables created in a schema of their own ({@code create}): with Hibernate's defaults ({@code oid} payload and
 * metadata columns) or with {@code bytea} columns and JDBC batching. Its transactions are JPA resource-local, one
 * entity manager each, bound to the thread that started them; a transaction started inside one joins it (Spring's
 * {@code REQUIRED}).
 */
final class HibernateOnPostgres implements TransactionManager, EntityManagerProvider, AutoCloseable {

    /** How Hibernate maps Axon's {@code @Lob byte[]} columns. */
    enum Columns {
        /** Hibernate's default on PostgreSQL: large objects. */
        OID,
        /** The bytes in the row, as docs/postgres.md recommends, with JDBC batches of 64. */
        BYTEA
    }

    private final SessionFactory factory;
    private final String schema;
    private final boolean hibernateNaming;
    private final ThreadLocal<EntityManager> current = new ThreadLocal<>();

    private HibernateOnPostgres(SessionFactory factory, String schema, boolean hibernateNaming) {
        this.factory = factory;
        this.schema = schema;
        this.hibernateNaming = hibernateNaming;
    }

    /** Creates the schema {@code schema} and Axon's tables in it, anew, named as Spring Boot names them. */
    static HibernateOnPostgres start(DataSource pool, String schema, Columns columns) throws Exception {
        return start(pool, schema, columns, false);
    }

    /**
     * @param hibernateNaming true for Hibernate's own names ({@code DomainEventEntry}, {@code metaData}: unquoted, so
     *                        PostgreSQL folds them to lower case), as without Spring; false for Spring Boot's
     *                        ({@code domain_event_entry}, {@code meta_data})
     */
    static HibernateOnPostgres start(DataSource pool, String schema, Columns columns, boolean hibernateNaming)
            throws Exception {
        try (var connection = pool.getConnection(); var statement = connection.createStatement()) {
            statement.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
            statement.execute("CREATE SCHEMA " + schema);
        }
        Configuration configuration = new Configuration().addAnnotatedClass(DomainEventEntry.class)
                                                         .addAnnotatedClass(SnapshotEventEntry.class);
        if (!hibernateNaming) {
            configuration.setPhysicalNamingStrategy(new CamelCaseToUnderscoresNamingStrategy());
        }
        configuration.getProperties().put(AvailableSettings.DATASOURCE, pool);
        configuration.setProperty(AvailableSettings.DEFAULT_SCHEMA, schema);
        configuration.setProperty(AvailableSettings.HBM2DDL_AUTO, "create");
        if (columns == Columns.BYTEA) {
            configuration.setProperty(AvailableSettings.DIALECT, ByteaPostgreSQLDialect.class.getName());
            configuration.setProperty(AvailableSettings.STATEMENT_BATCH_SIZE, "64");
            configuration.setProperty(AvailableSettings.ORDER_INSERTS, "true");
        }
        return new HibernateOnPostgres(configuration.buildSessionFactory(), schema, hibernateNaming);
    }

    /** The event table, qualified by its schema. */
    String eventTable() {
        return schema + (hibernateNaming ? ".domainevententry" : ".domain_event_entry");
    }

    EntityManagerFactory factory() {
        return factory;
    }

    @Override
    public Transaction startTransaction() {
        EntityManager joined = current.get();
        if (joined != null) {
            return new Transaction() {
                @Override
                public void commit() {
                }

                @Override
                public void rollback() {
                    joined.getTransaction().setRollbackOnly();
                }
            };
        }
        EntityManager entityManager = factory.createEntityManager();
        EntityTransaction transaction = entityManager.getTransaction();
        transaction.begin();
        current.set(entityManager);
        return new Transaction() {
            @Override
            public void commit() {
                try {
                    if (transaction.getRollbackOnly()) {
                        transaction.rollback();
                        throw new IllegalStateException("rolled back: a joined transaction was rolled back");
                    }
                    transaction.commit();
                } finally {
                    current.remove();
                    entityManager.close();
                }
            }

            @Override
            public void rollback() {
                try {
                    if (transaction.isActive()) {
                        transaction.rollback();
                    }
                } finally {
                    current.remove();
                    entityManager.close();
                }
            }
        };
    }

    @Override
    public EntityManager getEntityManager() {
        EntityManager entityManager = current.get();
        if (entityManager == null) {
            throw new IllegalStateException("No transaction on " + Thread.currentThread().getName());
        }
        return entityManager;
    }

    @Override
    public void close() {
        factory.close();
    }
}
