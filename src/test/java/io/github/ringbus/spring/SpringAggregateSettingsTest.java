package io.github.ringbus.spring;

import io.github.ringbus.fixtures.StageThreads;
import static io.github.ringbus.RingInternals.RING_REPOSITORY;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.common.caching.Cache;
import org.axonframework.common.caching.WeakReferenceCache;
import org.axonframework.common.lock.LockFactory;
import org.axonframework.config.Configuration;
import org.axonframework.config.ConfigurationScopeAwareProvider;
import org.axonframework.deadline.DeadlineManager;
import org.axonframework.deadline.SimpleDeadlineManager;
import org.axonframework.deadline.annotation.DeadlineHandler;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Deadlines and the per-aggregate settings of {@code @Aggregate} in a Spring Boot context: the deadline manager of
 * Axon's Spring support reaches ring aggregates; {@code commandTargetResolver} is honoured; {@code cache}, and a
 * {@code lockFactory} that is not one of Axon's in-process ones, fail start-up naming the setting.
 */
class SpringAggregateSettingsTest {

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

        /**
         * A deadline manager, as Axon's reference guide defines one for a Spring application without a scheduler of
         * its own: it finds aggregates through the configuration's repositories.
         */
        @Bean
        DeadlineManager deadlineManager(Configuration configuration) {
            return SimpleDeadlineManager.builder()
                                        .scopeAwareProvider(new ConfigurationScopeAwareProvider(configuration))
                                        .build();
        }

        @Bean
        Cache noteCache() {
            return new WeakReferenceCache();
        }

        @Bean
        LockFactory crossProcessLocks() {
            return identifier -> {
                throw new UnsupportedOperationException("a lock across processes");
            };
        }

        @Bean
        CommandTargetResolver byMetaData() {
            return command -> new VersionedAggregateIdentifier((String) command.getMetaData().get("note"), null);
        }
    }

    public record Remind(@TargetAggregateIdentifier String id, long inMillis) {
    }

    public record Reminded(String id, String thread) {
    }

    public record Written(String id) {
    }

    /** Schedules a deadline in its own scope; the deadline applies an event. */
    @Aggregate
    public static class Reminder {

        @AggregateIdentifier
        private String id;

        protected Reminder() {
        }

        @CommandHandler
        public Reminder(Remind command, DeadlineManager deadlines) {
            apply(new Written(command.id()));
            deadlines.schedule(Duration.ofMillis(command.inMillis()), "remind");
        }

        @DeadlineHandler(deadlineName = "remind")
        void remind() {
            apply(new Reminded(id, Thread.currentThread().getName()));
        }

        @EventSourcingHandler
        void on(Written event) {
            this.id = event.id();
        }
    }

    public record Write(@TargetAggregateIdentifier String id) {
    }

    public record Touch(@TargetAggregateIdentifier String id) {
    }

    @Aggregate(commandTargetResolver = "byMetaData")
    public static class ResolvedNote {

        @AggregateIdentifier
        private String id;

        protected ResolvedNote() {
        }

        @CommandHandler
        public ResolvedNote(Write command) {
            apply(new Written(command.id()));
        }

        @CommandHandler
        public String handle(Touch command) {
            return id;
        }

        @EventSourcingHandler
        void on(Written event) {
            this.id = event.id();
        }
    }

    @Aggregate(cache = "noteCache")
    public static class CachedNote {

        @AggregateIdentifier
        private String id;

        protected CachedNote() {
        }

        @CommandHandler
        public CachedNote(Write command) {
            apply(new Written(command.id()));
        }

        @EventSourcingHandler
        void on(Written event) {
            this.id = event.id();
        }
    }

    @Aggregate(lockFactory = "crossProcessLocks")
    public static class LockedNote {

        @AggregateIdentifier
        private String id;

        protected LockedNote() {
        }

        @CommandHandler
        public LockedNote(Write command) {
            apply(new Written(command.id()));
        }

        @EventSourcingHandler
        void on(Written event) {
            this.id = event.id();
        }
    }

    private final ApplicationContextRunner runner =
            new ApplicationContextRunner().withUserConfiguration(App.class)
                                          .withPropertyValues("axon.axonserver.enabled=false");

    @Test
    void theDeadlineManagerOfAxonsSpringSupportDeliversDeadlinesToRingAggregates() {
        runner.withUserConfiguration(Reminder.class).run(context -> {
            assertThat(context).hasNotFailed();
            Configuration axon = context.getBean(Configuration.class);
            assertThat(axon.repository(Reminder.class)).isInstanceOf(RING_REPOSITORY);
            assertThat(axon.deadlineManager()).isSameAs(context.getBean(DeadlineManager.class));

            context.getBean(CommandGateway.class).sendAndWait(new Remind("r", 20));

            EventStore events = context.getBean(EventStore.class);
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            List<Object> stored;
            while ((stored = events.readEvents("r").asStream().map(EventMessage::getPayload)
                                   .collect(Collectors.toList())).size() < 2 && System.nanoTime() < until) {
                Thread.sleep(10);
            }
            assertThat(stored).hasSize(2);
            assertThat(((Reminded) stored.get(1)).thread()).matches(StageThreads::handles);
        });
    }

    @Test
    void anAggregatesCommandTargetResolverBeanIsHonoured() {
        runner.withUserConfiguration(ResolvedNote.class).run(context -> {
            assertThat(context).hasNotFailed();
            CommandGateway gateway = context.getBean(CommandGateway.class);

            gateway.sendAndWait(new GenericCommandMessage<>(new Write("n"), Map.of("note", "n")));
            Object touched = gateway.sendAndWait(new GenericCommandMessage<>(new Touch("not-the-target"),
                                                                             Map.of("note", "n")));

            assertThat(touched).isEqualTo("n");
        });
    }

    @Test
    void anAggregatesCacheDoesNotStopStartUpAndIsNotUsedForTheRingAggregate() {
        runner.withUserConfiguration(CachedNote.class).run(context -> {
            assertThat(context).hasNotFailed();
            CommandGateway gateway = context.getBean(CommandGateway.class);

            gateway.sendAndWait(new Write("n"));

            assertThat(context.getBean(Configuration.class).repository(CachedNote.class))
                    .isInstanceOf(RING_REPOSITORY);
            assertThat(((Cache) context.getBean("noteCache")).containsKey("n"))
                    .as("the configured cache holds the aggregate").isFalse();
        });
    }

    @Test
    void anAggregatesLockFactoryOfAnotherKindFailsStartUpNamingTheSetting() {
        runner.withUserConfiguration(LockedNote.class).run(context -> {
            assertThat(context).hasFailed();
            assertThat(rootCause(context.getStartupFailure()))
                    .hasMessageContaining("Aggregate [" + LockedNote.class.getName()
                                                  + "] is configured with lock factory")
                    .hasMessageContaining("@Aggregate(lockFactory = ...)");
        });
    }

    private static Throwable rootCause(Throwable failure) {
        Throwable cause = failure;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause;
    }
}
