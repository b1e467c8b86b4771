package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.distributed.DistributedRingCommandBus;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

import java.io.IOException;
import java.net.ServerSocket;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code ringbus.distributed.*}: ringbus as the local segment of Axon's {@code DistributedCommandBus} in a Spring Boot
 * application, switched on by a property, only when Axon's JGroups connector is on the class path.
 */
class RingbusDistributedAutoConfigurationTest {

    static {
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(SpringAccount.class)
    static class BankApp {

        @Bean
        EventStorageEngine storageEngine() {
            return new InMemoryEventStorageEngine();
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    private static ApplicationContextRunner node(int port) {
        return new ApplicationContextRunner()
                .withUserConfiguration(BankApp.class)
                .withPropertyValues("axon.axonserver.enabled=false",
                                    // commands travel between nodes (and to this node itself) serialized
                                    "axon.serializer.messages=jackson",
                                    "ringbus.distributed.enabled=true",
                                    "ringbus.distributed.cluster-name=spring-" + port,
                                    "ringbus.distributed.node-name=spring-node",
                                    "ringbus.distributed.bind-port=" + port,
                                    "ringbus.distributed.initial-hosts=127.0.0.1:" + port,
                                    "ringbus.distributed.leave-grace-period=100ms");
    }

    @Test
    void theCommandBusIsADistributedBusWhoseLocalSegmentIsTheRing() throws IOException {
        node(freePort()).run(context -> {
            assertThat(context).hasNotFailed();
            CommandBus bus = context.getBean(Configuration.class).commandBus();
            assertThat(bus).isInstanceOf(DistributedRingCommandBus.class);
            DistributedRingCommandBus node = (DistributedRingCommandBus) bus;
            assertThat(node.localSegment()).isSameAs(context.getBean(RingCommandBus.class));
            assertThat(node.isJoined()).as("joined once the ring started").isTrue();
            assertThat(node.localSegment().isRunning()).isTrue();
            assertThat(node.nodeName()).isEqualTo("spring-node");

            CommandGateway gateway = context.getBean(CommandGateway.class);
            gateway.sendAndWait(new Open("a"));
            assertThat((Long) gateway.sendAndWait(new Deposit("a", 5))).isEqualTo(5L);
        });
    }

    @Test
    void closingTheApplicationDrainsTheRingAndLeaves() throws IOException {
        DistributedRingCommandBus[] node = new DistributedRingCommandBus[1];
        node(freePort()).run(context -> {
            node[0] = context.getBean(DistributedRingCommandBus.class);
            context.getBean(CommandGateway.class).sendAndWait(new Open("a"));
        });
        assertThat(node[0].isJoined()).isFalse();
        assertThat(node[0].localSegment().isRunning()).isFalse();
    }

    @Test
    void withoutThePropertyTheRingIsTheCommandBus() {
        new ApplicationContextRunner().withUserConfiguration(BankApp.class)
                                      .withPropertyValues("axon.axonserver.enabled=false")
                                      .run(context -> {
                                          assertThat(context).doesNotHaveBean(DistributedRingCommandBus.class);
                                          assertThat(context.getBean(Configuration.class).commandBus())
                                                  .isInstanceOf(RingCommandBus.class);
                                      });
    }

    @Test
    void withoutTheConnectorOnTheClassPathThePropertiesAreIgnored() throws IOException {
        node(freePort()).withClassLoader(new FilteredClassLoader("org.axonframework.extensions.jgroups"))
                        .run(context -> {
                            assertThat(context).hasNotFailed();
                            assertThat(context).doesNotHaveBean(DistributedRingCommandBus.class);
                            assertThat(context.getBean(Configuration.class).commandBus())
                                    .isInstanceOf(RingCommandBus.class);
                        });
    }

    @Test
    void aWrongPropertyFailsStartNamingIt() throws IOException {
        node(freePort()).withPropertyValues("ringbus.distributed.initial-hosts=nowhere")
                        .run(context -> assertThat(context).hasFailed()
                                                           .getFailure().rootCause()
                                                           .hasMessageContaining("initialHosts entry must be host:port"));
    }
}
