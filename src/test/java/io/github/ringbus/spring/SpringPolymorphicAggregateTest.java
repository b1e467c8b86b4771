package io.github.ringbus.spring;

import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.config.Configuration;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;

import java.util.stream.Collectors;

import static io.github.ringbus.RingInternals.RING_REPOSITORY;
import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * A polymorphic aggregate in a Spring Boot application (an abstract {@code @Aggregate} root with {@code @Aggregate}
 * subtypes), as Axon's Spring support finds it: the ring repository is built on the model Axon built with the
 * subtypes, so the subtypes' creation and instance commands reach their handlers, and a subtype's failed command
 * keeps nothing it applied.
 */
class SpringPolymorphicAggregateTest {

    static {
        System.setProperty("axoniq.update-checker.disabled", "true");
    }

    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    static class App {

        @Bean
        EventStorageEngine storageEngine() {
            return new InMemoryEventStorageEngine();
        }
    }

    public record CreateCat(@TargetAggregateIdentifier String id) {
    }

    public record CreateDog(@TargetAggregateIdentifier String id) {
    }

    public record Feed(@TargetAggregateIdentifier String id, int grams, boolean spill) {
    }

    public record Bark(@TargetAggregateIdentifier String id) {
    }

    public record Born(String id) {
    }

    public record Fed(int grams) {
    }

    public record Barked() {
    }

    @Aggregate
    public abstract static class Animal {

        @AggregateIdentifier
        protected String id;
        protected int eaten;

        @CommandHandler
        public int handle(Feed command) {
            apply(new Fed(command.grams()));
            if (command.spill()) {
                throw new IllegalStateException("spilled");
            }
            return eaten;
        }

        @EventSourcingHandler
        void on(Born event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Fed event) {
            eaten += event.grams();
        }
    }

    @Aggregate
    public static class Cat extends Animal {

        protected Cat() {
        }

        @CommandHandler
        public Cat(CreateCat command) {
            apply(new Born(command.id()));
        }
    }

    @Aggregate
    public static class Dog extends Animal {

        protected Dog() {
        }

        @CommandHandler
        public Dog(CreateDog command) {
            apply(new Born(command.id()));
        }

        @CommandHandler
        public String handle(Bark command) {
            apply(new Barked());
            return "woof";
        }
    }

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withUserConfiguration(App.class, Animal.class, Cat.class, Dog.class)
                                          .withPropertyValues("axon.axonserver.enabled=false");

    @Test
    void theSubtypesCommandsReachTheirHandlersOnTheRing() {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(Configuration.class).repository(Animal.class)).isInstanceOf(RING_REPOSITORY);
            CommandGateway gateway = context.getBean(CommandGateway.class);

            gateway.sendAndWait(new CreateCat("cat"));
            gateway.sendAndWait(new CreateDog("dog"));
            Object barked = gateway.sendAndWait(new Bark("dog"));
            Object eaten = gateway.sendAndWait(new Feed("cat", 5, false));

            assertThat(barked).isEqualTo("woof");
            assertThat(eaten).isEqualTo(5);
            assertThat(types(context.getBean(EventStore.class), "cat")).isEqualTo("Cat,Cat");
            assertThat(types(context.getBean(EventStore.class), "dog")).isEqualTo("Dog,Dog");
        });
    }

    @Test
    void aSubtypesFailedCommandKeepsNothingItApplied() {
        runner.run(context -> {
            CommandGateway gateway = context.getBean(CommandGateway.class);
            gateway.sendAndWait(new CreateDog("dog"));
            gateway.sendAndWait(new Feed("dog", 2, false));

            assertThat(gateway.send(new Feed("dog", 100, true))).failsWithin(java.time.Duration.ofSeconds(10));
            Object eaten = gateway.sendAndWait(new Feed("dog", 3, false));

            assertThat(eaten).isEqualTo(5);
            assertThat(context.getBean(EventStore.class).readEvents("dog").asStream()
                              .map(DomainEventMessage::getSequenceNumber).collect(Collectors.toList()))
                    .containsExactly(0L, 1L, 2L);
        });
    }

    private static String types(EventStore events, String id) {
        return events.readEvents(id).asStream().map(DomainEventMessage::getType).collect(Collectors.joining(","));
    }
}
