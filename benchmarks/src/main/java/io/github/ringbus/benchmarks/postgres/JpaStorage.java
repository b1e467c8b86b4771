package io.github.ringbus.benchmarks.postgres;

import io.github.ringbus.benchmarks.EventStorage;
import io.github.ringbus.jpa.ByteaPostgreSQLDialect;
import io.github.ringbus.jpa.PostgresJpaEventStorageEngine;
import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityManagerFactory;
import jakarta.persistence.EntityTransaction;
import java.util.Arrays;
import org.axonframework.common.jdbc.PersistenceExceptionResolver;
import org.axonframework.common.jpa.EntityManagerProvider;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventsourcing.eventstore.jpa.SQLStateResolver;
import org.axonframework.eventsourcing.eventstore.jpa.DomainEventEntry;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jpa.SnapshotEventEntry;
import org.hibernate.SessionFactory;
import org.hibernate.boot.model.naming.CamelCaseToUnderscoresNamingStrategy;
import org.hibernate.cfg.AvailableSettings;
import org.hibernate.cfg.Configuration;

/**
 * Axon's {@link JpaEventStorageEngine} on a {@link DurablePostgres}: Hibernate bootstrapped as Spring Boot's JPA
 * auto-configuration does for an Axon application without Axon Server (Boot's table names, {@code domain_event_entry},
 * the columns as Hibernate maps Axon's entities), without Spring. Each transaction of the {@link TransactionManager} it
 * hands out is one JPA resource-local transaction on an entity manager of its own, bound to the thread that started it
 * (as Spring's {@code JpaTransactionManager}); a transaction started on a thread that already has one joins it, and
 * its rollback marks the outer one rollback-only (Spring's {@code REQUIRED}).
 *
 * <p>Two mappings, named as the benchmark's {@code store} parameter: {@link Mapping#BOOT_DEFAULTS} (Hibernate's
 * defaults: Axon's {@code @Lob} payload and metadata as PostgreSQL large objects, {@code oid} columns, no JDBC batching)
 * and {@link Mapping#BYTEA_BATCHED} (what docs/postgres.md recommends and {@code examples/jpa-event-store} configures:
 * {@code bytea} columns, JDBC batches of 64 ordered inserts).
 */
public final class JpaStorage implements AutoCloseable {

    /** The event table as Spring Boot names Axon's {@code DomainEventEntry}. */
    public static final String EVENT_TABLE = "domain_event_entry";

    /** How Hibernate maps and writes Axon's entries. */
    public enum Mapping {

        /** Spring Boot's and Hibernate's defaults: {@code oid} payload and metadata columns, one INSERT at a time. */
        BOOT_DEFAULTS("jpa-boot-defaults"),

        /** {@code bytea} payload and metadata columns, JDBC batches of 64 with {@code order_inserts}. */
        BYTEA_BATCHED("jpa-bytea");

        private final String parameter;

        Mapping(String parameter) {
            this.parameter = parameter;
        }

        /** @return the mapping the benchmark's {@code store} parameter names, or null for any other value */
        public static Mapping named(String parameter) {
            return Arrays.stream(values()).filter(m -> m.parameter.equals(parameter)).findFirst().orElse(null);
        }
    }

    private final SessionFactory entityManagers;

    private JpaStorage(SessionFactory entityManagers) {
        this.entityManagers = entityManagers;
    }

    /**
     * Bootstraps Hibernate on the server's pool and creates Axon's tables as Hibernate maps them ({@code create}: the
     * columns an application's {@code ddl-auto} or a migration taken from the entities would have).
     */
    public static JpaStorage start(DurablePostgres postgres, Mapping mapping) {
        Configuration configuration = new Configuration().addAnnotatedClass(DomainEventEntry.class)
                                                         .addAnnotatedClass(SnapshotEventEntry.class);
        // Spring Boot's physical naming: DomainEventEntry is domain_event_entry, aggregateIdentifier
        // aggregate_identifier.
        configuration.setPhysicalNamingStrategy(new CamelCaseToUnderscoresNamingStrategy());
        configuration.getProperties().put(AvailableSettings.DATASOURCE, postgres.dataSource());
        configuration.setProperty(AvailableSettings.HBM2DDL_AUTO, "create");
        if (mapping == Mapping.BYTEA_BATCHED) {
            configuration.setProperty(AvailableSettings.DIALECT, ByteaPostgreSQLDialect.class.getName());
            configuration.setProperty(AvailableSettings.STATEMENT_BATCH_SIZE, "64");
            configuration.setProperty(AvailableSettings.ORDER_INSERTS, "true");
        }
        return new JpaStorage(configuration.buildSessionFactory());
    }

    /**
     * Where an application stores its events: Axon's JPA engine (or ringbus's {@link PostgresJpaEventStorageEngine})
     * whose entity manager is the current transaction's, and the transaction manager of those transactions (a command
     * bus given it commits once per command, Axon's buses, or once per batch of commands, ringbus).
     */
    public EventStorage eventStorage(boolean bulkAppend) {
        ThreadBoundTransactions transactions = new ThreadBoundTransactions(entityManagers);
        // Duplicate (aggregate, sequence number) keys are Axon ConcurrencyExceptions: pgjdbc reports them by SQLState
        // (under Hibernate's ConstraintViolationException), as Boot's SQLErrorCodesResolver resolves them there.
        PersistenceExceptionResolver duplicates = new SQLStateResolver("23505");
        // bulkAppend: ringbus's engine, as its Spring Boot auto-configuration builds it (one statement per batch);
        // else Axon's own (what ringbus.jpa-bulk-append=false, or an application without ringbus, has).
        JpaEventStorageEngine.Builder builder = bulkAppend ? PostgresJpaEventStorageEngine.builder()
                                                           : JpaEventStorageEngine.builder();
        return new EventStorage(() -> builder.transactionManager(transactions)
                                             .entityManagerProvider(transactions)
                                             .eventSerializer(DurablePostgres.serializer())
                                             .snapshotSerializer(DurablePostgres.serializer())
                                             .persistenceExceptionResolver(duplicates)
                                             .build(), transactions);
    }

    /** @return the type of the event table's payload column, as the server has it ({@code oid} or {@code bytea}) */
    public String payloadColumnType(DurablePostgres postgres) {
        return postgres.columnType(EVENT_TABLE, "payload");
    }

    @Override
    public void close() {
        entityManagers.close();
    }

    /**
     * JPA resource-local transactions, one entity manager each, bound to the thread that started them: the current
     * one is what Axon's engine works on ({@link EntityManagerProvider}). Each thread's binding is written and read by
     * that thread only.
     */
    private static final class ThreadBoundTransactions implements TransactionManager, EntityManagerProvider {

        private final EntityManagerFactory factory;
        private final ThreadLocal<EntityManager> current = new ThreadLocal<>();

        ThreadBoundTransactions(EntityManagerFactory factory) {
            this.factory = factory;
        }

        @Override
        public Transaction startTransaction() {
            EntityManager joined = current.get();
            if (joined != null) {
                // Spring's REQUIRED: the inner transaction joins the outer; its rollback dooms the outer one.
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
                            throw new IllegalStateException("Transaction marked rollback-only by a joined one");
                        }
                        transaction.commit();
                    } finally {
                        release(entityManager);
                    }
                }

                @Override
                public void rollback() {
                    try {
                        if (transaction.isActive()) {
                            transaction.rollback();
                        }
                    } finally {
                        release(entityManager);
                    }
                }
            };
        }

        private void release(EntityManager entityManager) {
            current.remove();
            entityManager.close();
        }

        @Override
        public EntityManager getEntityManager() {
            EntityManager entityManager = current.get();
            if (entityManager == null) {
                throw new IllegalStateException("Axon's JPA engine used outside a transaction on "
                                                + Thread.currentThread().getName());
            }
            return entityManager;
        }
    }
}
