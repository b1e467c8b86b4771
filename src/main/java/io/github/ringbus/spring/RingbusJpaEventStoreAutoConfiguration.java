package io.github.ringbus.spring;

import io.github.ringbus.jpa.PostgresJpaEventStorageEngine;
import org.axonframework.common.jdbc.PersistenceExceptionResolver;
import org.axonframework.common.jpa.EntityManagerProvider;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.eventhandling.EventBus;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.serialization.Serializer;
import org.axonframework.springboot.util.RegisterDefaultEntities;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * Axon's JPA event store as Axon's own {@code JpaEventStoreAutoConfiguration} makes it (the same settings, in the same
 * place: when the application has JPA, and no storage engine, event bus or event store of its own, nor Axon Server's),
 * built as a {@link PostgresJpaEventStorageEngine}: with Hibernate on PostgreSQL each batch of events is appended in one
 * statement, the same rows; on any other database or JPA provider, every append is Axon's own. Ordered before Axon's,
 * which then backs off. {@code ringbus.jpa-bulk-append=false} (or {@code ringbus.enabled=false}) leaves Axon's own
 * engine.
 */
@AutoConfiguration(
        beforeName = {
                "org.axonframework.springboot.autoconfig.JpaEventStoreAutoConfiguration",
                "org.axonframework.springboot.autoconfig.AxonAutoConfiguration"
        },
        afterName = {
                "org.axonframework.springboot.autoconfig.AxonServerBusAutoConfiguration",
                "org.springframework.boot.autoconfigure.orm.jpa.HibernateJpaAutoConfiguration",
                "org.springframework.boot.hibernate.autoconfigure.HibernateJpaAutoConfiguration"
        })
@ConditionalOnClass(name = {
        "org.axonframework.springboot.autoconfig.JpaEventStoreAutoConfiguration",
        "org.hibernate.Session",
        "jakarta.persistence.EntityManagerFactory"
})
@ConditionalOnBean(type = "jakarta.persistence.EntityManagerFactory")
@ConditionalOnMissingBean({EventStorageEngine.class, EventBus.class, EventStore.class})
@ConditionalOnProperty(prefix = RingbusProperties.PREFIX, name = {"enabled", "jpa-bulk-append"},
        havingValue = "true", matchIfMissing = true)
@RegisterDefaultEntities(packages = "org.axonframework.eventsourcing.eventstore.jpa")
public class RingbusJpaEventStoreAutoConfiguration {

    /** The engine, with the arguments and settings of Axon's own {@code eventStorageEngine} bean. */
    @Bean
    public EventStorageEngine eventStorageEngine(Serializer defaultSerializer,
                                                 PersistenceExceptionResolver persistenceExceptionResolver,
                                                 @Qualifier("eventSerializer") Serializer eventSerializer,
                                                 org.axonframework.config.Configuration configuration,
                                                 EntityManagerProvider entityManagerProvider,
                                                 TransactionManager transactionManager) {
        return PostgresJpaEventStorageEngine.builder()
                                            .transactionManager(transactionManager)
                                            .snapshotSerializer(defaultSerializer)
                                            .upcasterChain(configuration.upcasterChain())
                                            .persistenceExceptionResolver(persistenceExceptionResolver)
                                            .eventSerializer(eventSerializer)
                                            .snapshotFilter(configuration.snapshotFilter())
                                            .entityManagerProvider(entityManagerProvider)
                                            .build();
    }
}
