package io.github.ringbus.examples.axonserver;

import io.github.ringbus.RingCommandBus;
import org.axonframework.axonserver.connector.AxonServerConfiguration;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import com.thoughtworks.xstream.XStream;
import org.axonframework.eventhandling.EventHandler;
import org.axonframework.serialization.xml.XStreamSerializer;
import org.axonframework.eventhandling.PropagatingErrorHandler;

import java.util.function.Function;
import java.util.function.LongPredicate;

/**
 * One application node on the stand-in: Axon's own configuration with Axon Server's connector found on the class path
 * (its module makes {@code AxonServerEventStore} the event store), the {@link Account} aggregate, and, as command bus,
 * either a {@link RingCommandBus} or Axon's {@link SimpleCommandBus} (the twin whose outcomes ringbus must give).
 * Commands are dispatched on the bus itself, not through Axon Server's command routing (the Spring Boot test covers
 * that).
 */
final class Node implements AutoCloseable {

    final Configuration axon;

    private Node(Configuration axon) {
        this.axon = axon;
    }

    /** A node whose commands run on ringbus. */
    static Node ring(AxonServerStandIn server, LongPredicate auditorRefuses) {
        return start(server, auditorRefuses, c -> RingCommandBus.builder().axonConfiguration(c).build());
    }

    /** The twin: the same node on Axon's SimpleCommandBus. */
    static Node simple(AxonServerStandIn server, LongPredicate auditorRefuses) {
        return start(server, auditorRefuses, c -> SimpleCommandBus.builder().build());
    }

    private static Node start(AxonServerStandIn server, LongPredicate auditorRefuses,
                              Function<Configuration, CommandBus> bus) {
        AxonServerConfiguration serverConfiguration = AxonServerConfiguration.builder()
                                                                             .servers(server.address())
                                                                             .componentName("stand-in-test")
                                                                             .suppressDownloadMessage()
                                                                             .build();
        serverConfiguration.setCommitTimeout(1_000); // the stand-in answers in microseconds, or never
        Configurer configurer = DefaultConfigurer.defaultConfiguration()
                                                 .registerComponent(AxonServerConfiguration.class,
                                                                    c -> serverConfiguration)
                                                 .configureSerializer(c -> serializer())
                                                 .configureAggregate(Account.class)
                                                 .configureCommandBus(bus);
        // The auditor's refusal fails the command's Unit of Work, as a subscriber's failure does when it propagates.
        configurer.eventProcessing(processing -> processing.usingSubscribingEventProcessors()
                                                           .registerDefaultListenerInvocationErrorHandler(
                                                                   c -> PropagatingErrorHandler.instance())
                                                           .registerEventHandler(c -> new Auditor(auditorRefuses)));
        return new Node(configurer.start());
    }

    /** Axon's default serializer, XStream, allowed this example's types (the Spring Boot starter does the same). */
    private static XStreamSerializer serializer() {
        XStream xStream = new XStream();
        xStream.allowTypesByWildcard(new String[]{"io.github.ringbus.examples.**"});
        return XStreamSerializer.builder().xStream(xStream).build();
    }

    CommandGateway gateway() {
        return axon.commandGateway();
    }

    @Override
    public void close() {
        axon.shutdown();
    }

    /** A subscriber in the store's transaction (a subscribing processor) that refuses some deposits. */
    static final class Auditor {

        private final LongPredicate refuses;

        Auditor(LongPredicate refuses) {
            this.refuses = refuses;
        }

        @EventHandler
        void on(AccountMessages.Deposited event) {
            if (refuses.test(event.getAmount())) {
                throw new IllegalStateException("The auditor refuses a deposit of " + event.getAmount());
            }
        }
    }
}
