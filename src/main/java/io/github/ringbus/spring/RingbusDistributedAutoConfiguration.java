package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.distributed.DistributedRingCommandBus;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.config.Configuration;
import org.axonframework.serialization.Serializer;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * With {@code ringbus.distributed.enabled=true} and Axon's JGroups connector ({@code axon-jgroups}) on the class
 * path: the application's {@link CommandBus} is a {@link DistributedRingCommandBus} (primary), Axon's
 * {@code DistributedCommandBus} over JGroups TCP with the ringbus bean ({@code localSegment}) as its local segment,
 * built from the {@link RingbusDistributedProperties ringbus.distributed.* properties} and Axon's message serializer.
 * Axon's lifecycle starts the ring, then joins the node; at shutdown the node stops taking commands, the ring drains,
 * and the node leaves. Without the connector on the class path, the {@code ringbus.distributed.*} properties are
 * ignored and the ring stays the application's command bus.
 */
@AutoConfiguration(
        after = RingbusAutoConfiguration.class,
        beforeName = "org.axonframework.springboot.autoconfig.AxonAutoConfiguration")
@ConditionalOnClass(name = {
        "org.axonframework.extensions.jgroups.commandhandling.JGroupsConnector",
        "org.jgroups.JChannel",
        "org.axonframework.springboot.autoconfig.AxonAutoConfiguration"
})
@ConditionalOnProperty(prefix = RingbusDistributedProperties.PREFIX, name = "enabled", havingValue = "true")
@EnableConfigurationProperties(RingbusDistributedProperties.class)
public class RingbusDistributedAutoConfiguration {

    /** The node: Axon's distributed command bus over JGroups, with the ring as its local segment. */
    @Bean
    @Primary
    @ConditionalOnMissingBean(DistributedRingCommandBus.class)
    public DistributedRingCommandBus distributedRingCommandBus(@Qualifier("localSegment") RingCommandBus ring,
                                                               Configuration axonConfiguration,
                                                               RingbusDistributedProperties properties) {
        Serializer serializer = axonConfiguration.messageSerializer();
        DistributedRingCommandBus.Builder builder =
                DistributedRingCommandBus.builder()
                                         .localSegment(ring)
                                         .serializer(serializer)
                                         .clusterName(properties.getClusterName())
                                         .bind(properties.getBindAddress(), properties.getBindPort())
                                         .initialHosts(properties.getInitialHosts())
                                         .loadFactor(properties.getLoadFactor())
                                         .joinTimeout(properties.getJoinTimeout())
                                         .leaveGracePeriod(properties.getLeaveGracePeriod())
                                         .failureDetectionTimeout(properties.getFailureDetectionTimeout())
                                         .allowUnauthenticated(properties.isAllowUnauthenticated());
        if (properties.getSharedSecret() != null) {
            builder.sharedSecret(properties.getSharedSecret());
        }
        if (properties.getNodeName() != null) {
            builder.nodeName(properties.getNodeName());
        }
        return builder.build();
    }
}
