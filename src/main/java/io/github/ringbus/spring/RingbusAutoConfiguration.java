package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.PipelineMonitor;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.commandhandling.CommandBusSpanFactory;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.DefaultCommandBusSpanFactory;
import org.axonframework.commandhandling.DuplicateCommandHandlerResolver;
import org.axonframework.commandhandling.LoggingDuplicateCommandHandlerResolver;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.common.transaction.TransactionManager;
import org.axonframework.config.Configuration;
import org.axonframework.eventhandling.EventBus;
import org.axonframework.eventhandling.EventBusSpanFactory;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.axonframework.tracing.NoOpSpanFactory;
import org.axonframework.tracing.SpanFactory;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.beans.factory.config.BeanFactoryPostProcessor;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Lazy;
import org.springframework.util.ClassUtils;

import java.time.Duration;
import java.util.List;
import java.util.stream.Collectors;

/**
 * Makes a {@link RingCommandBus} the local command bus of an Axon Spring Boot application, with nothing but the
 * ringbus dependency on the class path.
 * <ul>
 *     <li>{@code ringCommandBus}: a {@link RingCommandBus} qualified {@code localSegment}, which is the application's
 *     {@link CommandBus}, or the local segment that Axon Server's or a {@code DistributedCommandBus} routes to. Built
 *     from the {@link RingbusProperties ringbus.* properties}, the application's {@link EventStore},
 *     {@link TransactionManager}, Axon's correlation data providers and command-bus message monitor, its
 *     {@link CommandBusSpanFactory} (tracing), Micrometer (metrics) and any {@link PipelineMonitor} beans. Axon
 *     starts it with the application and drains it on close: it is a {@link org.axonframework.lifecycle.Lifecycle}
 *     bean, which Axon's Spring support registers with its lifecycle.</li>
 *     <li>{@code eventBus}: a {@link RingEventStore} on the application's {@link EventStorageEngine} (Axon's JPA or
 *     JDBC engine, or one of the application's), unless the application has an event bus or store of its own (such
 *     as Axon Server's). It lets the ring store and publish events as two parallel stages.</li>
 *     <li>{@link RingbusAggregateRouting}: every {@code @Aggregate} event-sourced aggregate runs on a ringbus
 *     repository.</li>
 * </ul>
 * Ordered before Axon's {@code AxonAutoConfiguration}, so that Axon's own command bus and event store back off, and
 * after the auto-configurations that define the storage engine, transaction manager and tracing. The application's
 * own {@link CommandBus} or {@link EventBus} beans always win; {@code ringbus.enabled=false} turns it all off.
 */
@AutoConfiguration(
        beforeName = {
                "org.axonframework.springboot.autoconfig.AxonAutoConfiguration",
                "org.axonframework.springboot.autoconfig.InfraConfiguration"
        },
        afterName = {
                "org.axonframework.springboot.autoconfig.AxonServerAutoConfiguration",
                "org.axonframework.springboot.autoconfig.AxonServerBusAutoConfiguration",
                "org.axonframework.springboot.autoconfig.JpaEventStoreAutoConfiguration",
                "org.axonframework.springboot.autoconfig.legacyjpa.JpaJavaxEventStoreAutoConfiguration",
                "org.axonframework.springboot.autoconfig.JdbcAutoConfiguration",
                "org.axonframework.springboot.autoconfig.TransactionAutoConfiguration",
                "org.axonframework.springboot.autoconfig.NoOpTransactionAutoConfiguration",
                "org.axonframework.springboot.autoconfig.AxonTracingAutoConfiguration"
        })
@ConditionalOnClass(name = {
        "org.axonframework.spring.config.SpringConfigurer",
        "org.axonframework.springboot.autoconfig.AxonAutoConfiguration"
})
@ConditionalOnProperty(prefix = RingbusProperties.PREFIX, name = "enabled", havingValue = "true",
        matchIfMissing = true)
@EnableConfigurationProperties(RingbusProperties.class)
public class RingbusAutoConfiguration {

    /** The name of the bus bean, and the value of the {@code bus} tag of its metrics. */
    public static final String BUS_BEAN_NAME = "ringCommandBus";
    /** The name of the {@code SimpleCommandBus} bean made for components that ask for one (see its method). */
    public static final String OUTSIDE_RING_BUS_BEAN_NAME = "simpleCommandBus";

    private static final Logger logger = LoggerFactory.getLogger(RingbusAutoConfiguration.class);

    private static final boolean MICROMETER_PRESENT =
            ClassUtils.isPresent("io.micrometer.core.instrument.MeterRegistry",
                                 RingbusAutoConfiguration.class.getClassLoader());

    /**
     * The event store that lets the ring store and publish in parallel, on the application's storage engine. Named
     * and qualified like the one of Axon's auto-configuration, which it replaces.
     */
    @Bean(name = "eventBus")
    @Qualifier("eventStore")
    @ConditionalOnMissingBean(EventBus.class)
    @ConditionalOnBean(EventStorageEngine.class)
    public RingEventStore ringEventStore(EventStorageEngine storageEngine, Configuration axonConfiguration) {
        return (RingEventStore) RingEventStore.builder()
                                              .storageEngine(storageEngine)
                                              .messageMonitor(axonConfiguration.messageMonitor(EventStore.class,
                                                                                               "eventStore"))
                                              .spanFactory(axonConfiguration.getComponent(EventBusSpanFactory.class))
                                              .build();
    }

    /** The bus. */
    @Bean(name = BUS_BEAN_NAME)
    @Qualifier("localSegment")
    @ConditionalOnMissingBean(
            value = CommandBus.class,
            ignoredType = {
                    "org.axonframework.commandhandling.distributed.DistributedCommandBus",
                    "io.github.ringbus.distributed.DistributedRingCommandBus",
                    "org.axonframework.axonserver.connector.command.AxonServerCommandBus",
                    "org.axonframework.extensions.multitenancy.components.commandhandeling.MultiTenantCommandBus"
            })
    public RingCommandBus ringCommandBus(RingbusProperties properties,
                                         ObjectProvider<EventStore> eventStore,
                                         ObjectProvider<TransactionManager> transactionManager,
                                         Configuration axonConfiguration,
                                         ObjectProvider<CommandBusSpanFactory> commandBusSpanFactory,
                                         ObjectProvider<SpanFactory> spanFactory,
                                         ObjectProvider<PipelineMonitor> pipelineMonitors,
                                         ObjectProvider<javax.sql.DataSource> dataSource,
                                         ConfigurableListableBeanFactory beanFactory) {
        RingCommandBus.Builder builder = properties.applyTo(RingCommandBus.builder());
        Object applicationDataSource = dataSource.getIfUnique();
        int poolSize = ConnectionPools.sizeOf(applicationDataSource);
        if (poolSize > 0) {
            builder.connectionPoolSize(poolSize);
        }
        if (properties.getDatabaseLatency() == null && properties.getReadAheadThreads() == null) {
            Duration roundTrip = ConnectionPools.roundTripOf(applicationDataSource);
            if (roundTrip != null) {
                builder.databaseLatency(roundTrip);
            }
        }
        builder.eventStore(requireEventStore(eventStore))
               .transactionManager(transactionManager.getIfAvailable(() -> NoTransactionManager.INSTANCE))
               .messageMonitor(axonConfiguration.messageMonitor(CommandBus.class, "commandBus"))
               .handlerInterceptor(new CorrelationDataInterceptor<CommandMessage<?>>(
                       axonConfiguration.correlationDataProviders()));
        if (properties.getTracing().isEnabled()) {
            CommandBusSpanFactory tracing = commandBusSpanFactory.getIfUnique();
            if (tracing != null && !isNoOp(tracing, spanFactory.getIfUnique())) {
                builder.spanFactory(tracing);
            }
        }
        List<PipelineMonitor> monitors = pipelineMonitors.orderedStream().collect(Collectors.toList());
        RingbusMetrics metrics = null;
        if (properties.getMetrics().isEnabled() && MICROMETER_PRESENT) {
            metrics = MicrometerSupport.metrics(beanFactory, BUS_BEAN_NAME);
            if (metrics != null) {
                monitors.add(metrics);
            }
        }
        if (!monitors.isEmpty()) {
            builder.pipelineMonitor(CompositePipelineMonitor.of(monitors));
        }
        RingCommandBus bus;
        try {
            bus = builder.build();
        } catch (AxonConfigurationException refused) {
            // Each property was valid alone, their combination is not: say it in the properties' terms (reported by
            // InvalidRingbusPropertyFailureAnalyzer), not in the builder's.
            String inProperties = RingbusProperties.inPropertyTerms(refused.getMessage());
            if (inProperties.contains(RingbusProperties.PREFIX + ".")) {
                throw new InvalidRingbusPropertyException(inProperties, refused);
            }
            throw refused;
        }
        if (metrics != null) {
            metrics.bindTo(bus);
        }
        // Axon's Spring support starts and stops the Lifecycle beans of the context. A post-processor may expose this
        // bean wrapped in a plain CommandBus (a monitoring starter's decorator), which Axon would then never start:
        // register the ring itself. Unwrapped, Axon registers it a second time, which is harmless (start and
        // shutdown do nothing the second time).
        bus.registerLifecycleHandlers(axonConfiguration.lifecycleRegistry());
        return bus;
    }

    /**
     * Axon's {@link SimpleCommandBus}, for an application component that asks for one by type (Axon's
     * auto-configuration declares its bus bean as one, and ringbus's replaces it): to run several commands on the
     * caller's thread in one Unit of Work and transaction, say. Lazy: made only when such a component asks for it,
     * and then said in the log. Built as Axon's bean is (transaction manager, duplicate handler resolver, tracing,
     * message monitor, correlation data), with every command handler of the ring subscribed on it too
     * ({@link RingCommandBus#subscribeHandlersAlsoOn}): its commands run outside the ring, on the caller's thread,
     * with Axon's own repositories, and the ring reads its cached aggregates again after each of them commits. The
     * ring stays the application's {@code CommandBus} ({@link #ringbusPrimaryCommandBus}).
     */
    @Bean(name = OUTSIDE_RING_BUS_BEAN_NAME)
    @Lazy
    @ConditionalOnBean(name = BUS_BEAN_NAME)
    @ConditionalOnMissingBean(SimpleCommandBus.class)
    public SimpleCommandBus simpleCommandBus(ObjectProvider<TransactionManager> transactionManager,
                                             ObjectProvider<DuplicateCommandHandlerResolver> duplicates,
                                             Configuration axonConfiguration,
                                             ConfigurableListableBeanFactory beanFactory) {
        SimpleCommandBus bus = SimpleCommandBus.builder()
                .transactionManager(transactionManager.getIfAvailable(() -> NoTransactionManager.INSTANCE))
                .duplicateCommandHandlerResolver(
                        duplicates.getIfAvailable(LoggingDuplicateCommandHandlerResolver::instance))
                .spanFactory(axonConfiguration.getComponent(CommandBusSpanFactory.class))
                .messageMonitor(axonConfiguration.messageMonitor(CommandBus.class, "commandBus"))
                .build();
        bus.registerHandlerInterceptor(
                new CorrelationDataInterceptor<CommandMessage<?>>(axonConfiguration.correlationDataProviders()));
        RingbusAggregateRouting.ringOf(beanFactory, BUS_BEAN_NAME).subscribeHandlersAlsoOn(bus);
        logger.info("ringbus: bean [{}], a SimpleCommandBus the application asked for, runs its commands outside the "
                            + "ring: on the dispatching thread, with the ring's handlers and Axon's own repositories "
                            + "(aggregates read from the event store); after each of its commands commits, the ring "
                            + "reads its cached aggregates again. The application's CommandBus is still [{}]",
                    OUTSIDE_RING_BUS_BEAN_NAME, BUS_BEAN_NAME);
        return bus;
    }

    /**
     * Makes the ring the primary {@link CommandBus} when {@link #simpleCommandBus} stands beside it and no other
     * command bus is primary (a distributed bus, Axon Server's), so that Axon and the application's components that
     * ask for a {@code CommandBus} get the ring, as before.
     */
    @Bean
    static BeanFactoryPostProcessor ringbusPrimaryCommandBus() {
        return beanFactory -> {
            if (!beanFactory.containsBeanDefinition(BUS_BEAN_NAME)
                    || !beanFactory.containsBeanDefinition(OUTSIDE_RING_BUS_BEAN_NAME)) {
                return;
            }
            for (String name : beanFactory.getBeanNamesForType(CommandBus.class, true, false)) {
                if (beanFactory.containsBeanDefinition(name) && beanFactory.getBeanDefinition(name).isPrimary()) {
                    return;
                }
            }
            beanFactory.getBeanDefinition(BUS_BEAN_NAME).setPrimary(true);
        };
    }

    /** Records the ring bus beans as created, so that ringbus finds them behind any wrapper; see the class. */
    @Bean
    static RingCommandBusBeans ringCommandBusBeans() {
        return new RingCommandBusBeans();
    }

    /** Routes the {@code @Aggregate} aggregates through the ring. */
    @Bean
    public RingbusAggregateRouting ringbusAggregateRouting(ConfigurableListableBeanFactory beanFactory) {
        return new RingbusAggregateRouting(beanFactory);
    }

    private static EventStore requireEventStore(ObjectProvider<EventStore> eventStore) {
        EventStore store = eventStore.getIfUnique();
        if (store == null) {
            throw new MissingEventStoreException(eventStore.stream().count() == 0);
        }
        return store;
    }

    /** Axon's default tracing does nothing: skip it, so that dispatch allocates nothing for spans. */
    private static boolean isNoOp(CommandBusSpanFactory commandBusSpanFactory, SpanFactory spanFactory) {
        return commandBusSpanFactory instanceof DefaultCommandBusSpanFactory
                && spanFactory instanceof NoOpSpanFactory;
    }
}
