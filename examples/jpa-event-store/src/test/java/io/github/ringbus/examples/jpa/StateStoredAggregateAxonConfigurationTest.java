package io.github.ringbus.examples.jpa;

import io.github.ringbus.jpa.ByteaPostgreSQLDialect;
import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.examples.jpa.Counter.CreateCounter;
import io.github.ringbus.examples.jpa.Counter.Increment;
import io.github.ringbus.examples.jpa.Counter.IncrementThenFail;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import jakarta.persistence.EntityManagerFactory;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.common.jpa.EntityManagerProvider;
import org.axonframework.common.jpa.SimpleEntityManagerProvider;
import org.axonframework.common.lock.PessimisticLockFactory;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.axonframework.modelling.command.GenericJpaRepository;
import org.axonframework.serialization.json.JacksonSerializer;
import org.axonframework.spring.messaging.unitofwork.SpringTransactionManager;
import org.hibernate.boot.model.naming.CamelCaseToUnderscoresNamingStrategy;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.orm.jpa.LocalContainerEntityManagerFactoryBean;
import org.springframework.orm.jpa.SharedEntityManagerCreator;
import org.springframework.orm.jpa.vendor.HibernateJpaVendorAdapter;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * The same state-stored aggregate in a plain Axon configuration (no Spring Boot; found by ringbus's
 * {@code RingbusConfigurerModule}): {@code AggregateConfigurer.jpaMappedConfiguration} with Axon's default
 * {@link PessimisticLockFactory}, Hibernate on a real PostgreSQL server, Spring's JPA transactions through Axon's
 * {@link SpringTransactionManager}, ringbus with two handler threads.
 */
class StateStoredAggregateAxonConfigurationTest {

    private static EmbeddedPostgres postgres;
    private static HikariDataSource dataSource;
    private static LocalContainerEntityManagerFactoryBean entityManagerFactoryBean;

    private Configuration configuration;

    @BeforeAll
    static void startDatabase() throws IOException {
        postgres = EmbeddedPostgres.builder().setRegisterShutdownHook(false).start();
        dataSource = new HikariDataSource();
        dataSource.setJdbcUrl(postgres.getJdbcUrl("postgres", "postgres"));
        dataSource.setMaximumPoolSize(10);
        entityManagerFactoryBean = new LocalContainerEntityManagerFactoryBean();
        entityManagerFactoryBean.setDataSource(dataSource);
        entityManagerFactoryBean.setPackagesToScan("io.github.ringbus.examples.jpa",
                                                   "org.axonframework.eventsourcing.eventstore.jpa");
        entityManagerFactoryBean.setJpaVendorAdapter(new HibernateJpaVendorAdapter());
        entityManagerFactoryBean.setJpaPropertyMap(Map.of(
                "hibernate.hbm2ddl.auto", "update",
                "hibernate.dialect", ByteaPostgreSQLDialect.class.getName(),
                // Column names as under Spring Boot (counter_id, out_of_order, aggregate_identifier, ...).
                "hibernate.physical_naming_strategy", CamelCaseToUnderscoresNamingStrategy.class.getName()));
        entityManagerFactoryBean.afterPropertiesSet();
    }

    @AfterAll
    static void stopDatabase() throws IOException {
        entityManagerFactoryBean.destroy();
        dataSource.close();
        postgres.close();
    }

    @AfterEach
    void shutDown() {
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    private Configuration start() {
        EntityManagerFactory entityManagerFactory = entityManagerFactoryBean.getObject();
        TransactionManager transactions = new SpringTransactionManager(new JpaTransactionManager(entityManagerFactory));
        EntityManagerProvider entityManagers =
                new SimpleEntityManagerProvider(SharedEntityManagerCreator.createSharedEntityManager(entityManagerFactory));
        JpaEventStorageEngine engine = JpaEventStorageEngine.builder()
                                                            .entityManagerProvider(entityManagers)
                                                            .transactionManager(transactions)
                                                            .eventSerializer(JacksonSerializer.defaultSerializer())
                                                            .snapshotSerializer(JacksonSerializer.defaultSerializer())
                                                            .build();
        configuration = DefaultConfigurer.defaultConfiguration()
                .configureTransactionManager(c -> transactions)
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                .configureCommandBus(c -> RingCommandBus.builder()
                                                        .eventStore(c.eventStore())
                                                        .transactionManager(transactions)
                                                        .handlerThreads(2)
                                                        .build())
                .configureAggregate(AggregateConfigurer.jpaMappedConfiguration(Counter.class, entityManagers)
                                                       .configureLockFactory(c -> PessimisticLockFactory.usingDefaults()))
                .start();
        return configuration;
    }

    @Test
    void manyCommandsFromSeveralDispatchersUnderAxonsPessimisticLockAllSucceedInOrderWithExactCounts()
            throws Exception {
        Configuration config = start();
        assertThat(config.repository(Counter.class)).isInstanceOf(GenericJpaRepository.class);
        CommandGateway gateway = config.commandGateway();
        int counters = 3;
        int dispatchers = 3;
        int perDispatcherAndCounter = 30;
        for (int c = 0; c < counters; c++) {
            gateway.sendAndWait(new CreateCounter("plain-" + c), 30, TimeUnit.SECONDS);
        }

        ExecutorService pool = Executors.newFixedThreadPool(dispatchers);
        try {
            List<Future<List<CompletableFuture<Object>>>> sent = new ArrayList<>();
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                sent.add(pool.submit(() -> {
                    List<CompletableFuture<Object>> results = new ArrayList<>();
                    for (int n = 1; n <= perDispatcherAndCounter; n++) {
                        for (int c = 0; c < counters; c++) {
                            results.add(gateway.send(new Increment("plain-" + c, dispatcher, n)));
                        }
                    }
                    return results;
                }));
            }
            for (Future<List<CompletableFuture<Object>>> dispatched : sent) {
                for (CompletableFuture<Object> result : dispatched.get(30, TimeUnit.SECONDS)) {
                    result.get(30, TimeUnit.SECONDS);
                }
            }
        } finally {
            pool.shutdownNow();
        }

        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        long expected = (long) dispatchers * perDispatcherAndCounter;
        for (int c = 0; c < counters; c++) {
            String id = "plain-" + c;
            Map<String, Object> row = jdbc.queryForMap(
                    "SELECT count, out_of_order FROM state_stored_counter WHERE counter_id = ?", id);
            assertThat(row.get("count")).as("count of %s", id).isEqualTo(expected);
            assertThat(row.get("out_of_order")).as("commands of %s out of order", id).isEqualTo(0L);
            assertThat(jdbc.queryForObject("SELECT count(*) FROM domain_event_entry WHERE aggregate_identifier = ?",
                                           Long.class, id))
                    .isEqualTo(expected + 1);
            assertThat(Counter.HANDLER_THREADS.get(id)).as("threads of %s", id).hasSize(1);
        }
    }

    @Test
    void aFailingCommandReleasesAxonsPessimisticLockAndLeavesTheEntityUnchanged() throws Exception {
        Configuration config = start();
        CommandGateway gateway = config.commandGateway();
        gateway.sendAndWait(new CreateCounter("plain-fails"), 30, TimeUnit.SECONDS);

        Throwable failure = catchThrowable(
                () -> gateway.sendAndWait(new IncrementThenFail("plain-fails"), 30, TimeUnit.SECONDS));

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessage("refused after apply");
        JdbcTemplate jdbc = new JdbcTemplate(dataSource);
        assertThat(jdbc.queryForObject("SELECT count FROM state_stored_counter WHERE counter_id = 'plain-fails'",
                                       Long.class)).isZero();
        // The next command takes the lock again (on whichever thread): it must not wait for a lock left held.
        Object count = gateway.sendAndWait(new Increment("plain-fails", 0, 1), 30, TimeUnit.SECONDS);
        assertThat(count).isEqualTo(1L);
        assertThat(jdbc.queryForObject("SELECT count(*) FROM domain_event_entry "
                                               + "WHERE aggregate_identifier = 'plain-fails'", Long.class))
                .isEqualTo(2L);
    }
}
