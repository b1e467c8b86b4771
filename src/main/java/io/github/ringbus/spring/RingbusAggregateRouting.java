package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingbusConfigurerModule;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.ConfigurerModule;
import org.axonframework.spring.config.SpringAggregateConfigurer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.config.ConfigurableListableBeanFactory;

import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Routes the application's {@code @Aggregate} event-sourced aggregates through the {@link RingCommandBus} bean: each
 * gets a ringbus repository in place of Axon's {@code EventSourcingRepository}.
 * <p>
 * The Spring counterpart of {@link io.github.ringbus.RingbusConfigurerModule}: Axon's Spring Boot support builds
 * its configuration with a {@code SpringConfigurer}, which applies the {@code ConfigurerModule} beans of the context
 * and not the ones listed in {@code META-INF/services}. Spring registers every {@code @Aggregate} through an
 * {@link org.axonframework.config.AggregateConfigurer} (by a {@link SpringAggregateConfigurer} bean), so they are all found here.
 * <p>
 * Keep their repository: aggregates mapped with JPA ({@code @Entity}), and aggregates whose
 * {@code @Aggregate(repository = ...)} names a repository bean (or that have a bean called
 * {@code <aggregate>Repository} of their own). Their commands are routed by aggregate, and each runs whole on the
 * handler thread that owns its aggregate, in a Unit of Work and transaction of its own, lock included (see
 * {@link RingbusConfigurerModule}).
 * <p>
 * The ring bus bean is looked up by name at initialization and only fetched when a repository is first needed, so
 * this module does not create the bus while Axon's configuration is being built. The bean may expose another type
 * than {@link RingCommandBus}: a post-processor may have wrapped it (a monitoring or fault-injection starter, a Spring
 * AOP proxy). The ring behind it is the one {@link RingCommandBusBeans} saw being created under that name.
 */
public class RingbusAggregateRouting implements ConfigurerModule {

    private static final Logger logger = LoggerFactory.getLogger(RingbusAggregateRouting.class);

    private final ConfigurableListableBeanFactory beanFactory;

    /**
     * @param beanFactory the application's bean factory, holding the {@link RingCommandBus} bean
     */
    public RingbusAggregateRouting(ConfigurableListableBeanFactory beanFactory) {
        this.beanFactory = beanFactory;
    }

    @Override
    public void configureModule(Configurer configurer) {
        configurer.onInitialize(this::routeAggregates);
    }

    private void routeAggregates(Configuration configuration) {
        String busName = ringBusBeanName();
        if (busName == null) {
            logger.info("No RingCommandBus bean in the context: aggregates keep Axon's repositories");
            return;
        }
        logger.debug("Aggregates run through RingCommandBus [{}]", busName);
        RingbusConfigurerModule.routeAggregates(configuration, () -> ring(busName));
    }

    /**
     * The ring bus of the named bean, whatever the bean exposes: the instance created under that name, before any
     * post-processor wrapped it; else the bean itself or the local segment of a distributed bus.
     */
    private RingCommandBus ring(String busName) {
        return ringOf(beanFactory, busName);
    }

    /**
     * The ring bus of the named bean, whatever the bean exposes (see {@link #ring(String)}).
     *
     * @param beanFactory the application's bean factory
     * @param busName     the name of the ring bus bean
     * @return the ring created under that name
     */
    static RingCommandBus ringOf(ConfigurableListableBeanFactory beanFactory, String busName) {
        Object bean = beanFactory.getBean(busName); // creates it if it was not yet
        RingCommandBusBeans created = beanFactory.getBeanProvider(RingCommandBusBeans.class).getIfAvailable();
        RingCommandBus ring = created == null ? null : created.ring(busName);
        if (ring == null && bean instanceof CommandBus) {
            ring = RingCommandBus.localRingOf((CommandBus) bean);
        }
        if (ring == null) {
            throw new AxonConfigurationException(
                    "ringbus: bean [" + busName + "] was found as a RingCommandBus but is a "
                            + bean.getClass().getName() + ", and no RingCommandBus was seen being created under that "
                            + "name (was it created before the bean post-processors were registered?)");
        }
        return ring;
    }

    /** The name of the one RingCommandBus bean, found without creating any bean; null if there is none. */
    private String ringBusBeanName() {
        // By type finds ring buses not created yet; a ring bus already created and wrapped by a post-processor
        // exposes the wrapper's type, and only the record of the created ring buses knows it.
        Set<String> found = new LinkedHashSet<>(List.of(beanFactory.getBeanNamesForType(RingCommandBus.class, true,
                                                                                         false)));
        RingCommandBusBeans created = beanFactory.getBeanProvider(RingCommandBusBeans.class).getIfAvailable();
        if (created != null) {
            found.addAll(created.names());
        }
        String[] names = found.toArray(new String[0]);
        if (names.length == 0) {
            return null;
        }
        if (names.length == 1) {
            return names[0];
        }
        String primary = null;
        for (String name : names) {
            if (beanFactory.containsBeanDefinition(name) && beanFactory.getBeanDefinition(name).isPrimary()) {
                if (primary != null) {
                    primary = null;
                    break;
                }
                primary = name;
            }
        }
        if (primary == null) {
            throw new AxonConfigurationException(
                    "ringbus found " + names.length + " RingCommandBus beans " + String.join(", ", names)
                            + " and cannot tell which one runs the aggregates: mark one @Primary");
        }
        return primary;
    }
}
