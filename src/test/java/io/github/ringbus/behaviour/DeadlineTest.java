package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.RingCommandBus;
import static io.github.ringbus.RingInternals.RING_REPOSITORY;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.Invoice;
import io.github.ringbus.fixtures.Invoice.Cancel;
import io.github.ringbus.fixtures.Invoice.Cancelled;
import io.github.ringbus.fixtures.Invoice.GetStatus;
import io.github.ringbus.fixtures.Invoice.Issue;
import io.github.ringbus.fixtures.Invoice.Issued;
import io.github.ringbus.fixtures.Invoice.MarkedOverdue;
import io.github.ringbus.fixtures.Invoice.Pay;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.config.Configuration;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.deadline.DeadlineManager;
import org.axonframework.deadline.DeadlineMessage;
import org.axonframework.deadline.SimpleDeadlineManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.correlation.MessageOriginProvider;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.axonframework.modelling.command.AggregateScopeDescriptor;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Deadlines of aggregates, delivered by Axon's real {@link SimpleDeadlineManager} (the default of an Axon
 * configuration) through the repository's {@code send}. Each scenario runs on Axon's own configuration (its
 * {@link SimpleCommandBus} and {@code EventSourcingRepository}) and on ringbus, and ringbus must behave the same.
 */
class DeadlineTest {

    enum Bus { AXON, RINGBUS }

    /** What the deadline manager saw of one deadline it ran: its name and the failure it got, if any. */
    record Fired(String deadlineName, Throwable failure, String thread) {
    }

    private final BlockingQueue<Fired> fired = new LinkedBlockingQueue<>();
    private Configuration configuration;

    @AfterEach
    void shutDown() {
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    private Configuration start(Bus bus) {
        Configurer configurer = DefaultConfigurer.defaultConfiguration()
                                                 .configureEventStore(c -> RingEventStore.builder()
                                                                                         .storageEngine(new InMemoryEventStorageEngine())
                                                                                         .build())
                                                 .configureAggregate(Invoice.class);
        if (bus == Bus.RINGBUS) {
            configurer.configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore())
                                                              .handlerThreads(2).build());
        }
        configuration = configurer.start();
        deadlineManager().registerHandlerInterceptor(recordOutcome());
        return configuration;
    }

    /**
     * Records every deadline the deadline manager runs, once its Unit of Work committed, or with the failure it saw
     * (what it logs).
     */
    private MessageHandlerInterceptor<DeadlineMessage<?>> recordOutcome() {
        return (unitOfWork, chain) -> {
            String name = unitOfWork.getMessage().getDeadlineName();
            try {
                Object result = chain.proceed();
                // After the commit: on Axon's own bus the deadline's events are appended when its Unit of Work
                // commits, after this interceptor returns.
                String thread = Thread.currentThread().getName();
                unitOfWork.afterCommit(u -> fired.add(new Fired(name, null, thread)));
                return result;
            } catch (Exception e) {
                fired.add(new Fired(name, e, Thread.currentThread().getName()));
                throw e;
            }
        };
    }

    private DeadlineManager deadlineManager() {
        return configuration.deadlineManager();
    }

    private Fired awaitFired() throws InterruptedException {
        Fired next = fired.poll(10, TimeUnit.SECONDS);
        assertThat(next).as("a deadline fired within 10 s").isNotNull();
        return next;
    }

    private List<Object> storedPayloads(String id) {
        return configuration.eventStore().readEvents(id).asStream().map(EventMessage::getPayload)
                            .collect(Collectors.toList());
    }

    private <R> R send(Object command) {
        return configuration.commandGateway().sendAndWait(command);
    }

    @ParameterizedTest
    @EnumSource(Bus.class)
    void aDeadlineScheduledByACommandHandlerFiresAndItsEventsAreStoredAndSeenByLaterCommands(Bus bus)
            throws Exception {
        start(bus);

        send(new Issue("i1", 30, Invoice.DUE));
        Fired due = awaitFired();

        assertThat(due.deadlineName()).isEqualTo(Invoice.DUE);
        assertThat(due.failure()).isNull();
        assertThat(storedPayloads("i1")).extracting(Object::getClass)
                                        .containsExactly((Class) Issued.class, MarkedOverdue.class);
        assertThat((String) send(new GetStatus("i1"))).isEqualTo("overdue");
        assertThatThrownBy(() -> send(new Pay("i1"))).hasMessageContaining("is overdue");
    }

    @Test
    void aDeadlineRunsOnTheHandlerThreadThatOwnsItsAggregateAndSoNeverBesideItsCommands() throws Exception {
        start(Bus.RINGBUS);
        List<String> invoices = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            invoices.add("thread-" + i);
            send(new Issue("thread-" + i, 20, Invoice.DUE));
        }
        for (int i = 0; i < invoices.size(); i++) {
            assertThat(awaitFired().failure()).isNull();
        }

        for (String id : invoices) {
            List<Object> events = storedPayloads(id);
            assertThat(events).hasSize(2);
            String commandThread = ((Issued) events.get(0)).thread();
            String deadlineThread = ((MarkedOverdue) events.get(1)).thread();
            assertThat(commandThread).matches(StageThreads::handles);
            assertThat(deadlineThread).as("thread of %s's deadline", id).isEqualTo(commandThread);
        }
        assertThat(invoices.stream().map(id -> ((Issued) storedPayloads(id).get(0)).thread()).distinct())
                .as("the invoices are spread over both handler threads").hasSize(2);
    }

    @ParameterizedTest
    @EnumSource(Bus.class)
    void aDeadlineHandlerThatThrowsIsReportedToTheDeadlineManagerAndItsEventsAreDiscarded(Bus bus)
            throws Exception {
        start(bus);

        send(new Issue("i3", 20, Invoice.DUE_FAILS));
        Fired due = awaitFired();

        assertThat(due.failure()).as("the failure the deadline manager saw").isNotNull();
        assertThat(rootCause(due.failure())).isInstanceOf(IllegalStateException.class)
                                            .hasMessageContaining("fails on purpose");
        assertThat(storedPayloads("i3")).extracting(Object::getClass).containsExactly((Class) Issued.class);
        assertThat((String) send(new GetStatus("i3"))).isEqualTo("open");
        send(new Pay("i3"));
        assertThat((String) send(new GetStatus("i3"))).isEqualTo("paid");
    }

    @ParameterizedTest
    @EnumSource(Bus.class)
    void aDeadlineForAnAggregateThatDoesNotExistIsDroppedWithoutAFailure(Bus bus) throws Exception {
        start(bus);

        deadlineManager().schedule(Duration.ofMillis(10), Invoice.DUE, null,
                                   new AggregateScopeDescriptor("Invoice", "missing"));
        Fired due = awaitFired();

        assertThat(due.failure()).isNull();
        assertThat(storedPayloads("missing")).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(Bus.class)
    void aDeadlineForADeletedAggregateIsDroppedWithoutAFailure(Bus bus) throws Exception {
        start(bus);

        send(new Issue("i5", 200, Invoice.DUE));
        send(new Cancel("i5"));
        Fired due = awaitFired();

        assertThat(due.failure()).isNull();
        assertThat(storedPayloads("i5")).extracting(Object::getClass)
                                        .containsExactly((Class) Issued.class, Cancelled.class);
    }

    @ParameterizedTest
    @EnumSource(Bus.class)
    void commandHandlerInterceptorsDoNotSeeDeadlines(Bus bus) throws Exception {
        start(bus);
        List<Object> intercepted = new CopyOnWriteArrayList<>();
        configuration.commandBus().registerHandlerInterceptor(
                (MessageHandlerInterceptor<CommandMessage<?>>) (unitOfWork, chain) -> {
                    intercepted.add(unitOfWork.getMessage().getPayloadType());
                    return chain.proceed();
                });

        send(new Issue("i6", 20, Invoice.DUE));
        assertThat(awaitFired().failure()).isNull();

        assertThat(intercepted).containsExactly(Issue.class);
        assertThat(storedPayloads("i6")).hasSize(2);
    }

    @ParameterizedTest
    @EnumSource(Bus.class)
    void eventsAppliedByADeadlineCarryTheCorrelationDataOfTheDeadlinesUnitOfWork(Bus bus) throws Exception {
        start(bus);
        deadlineManager().registerHandlerInterceptor(
                new CorrelationDataInterceptor<>(List.of(new MessageOriginProvider())));
        send(new Issue("i7", 0, null));

        String deadlineId = deadlineManager().schedule(Duration.ofMillis(10), Invoice.DUE, null,
                                                       new AggregateScopeDescriptor("Invoice", "i7"));
        assertThat(awaitFired().failure()).isNull();

        DomainEventMessage<?> overdue = configuration.eventStore().readEvents("i7").asStream()
                                                     .filter(e -> e.getPayload() instanceof MarkedOverdue)
                                                     .findFirst().orElseThrow();
        assertThat(overdue.getMetaData()).containsEntry("correlationId", deadlineId)
                                         .containsEntry("traceId", deadlineId);
    }

    @Test
    void theConfigurationsScopeAwareProviderFindsTheRingRepository() {
        start(Bus.RINGBUS);
        AggregateScopeDescriptor scope = new AggregateScopeDescriptor("Invoice", "any");

        assertThat(configuration.scopeAwareProvider().provideScopeAwareStream(scope)
                                .filter(component -> component.canResolve(scope)))
                .singleElement().isInstanceOf(RING_REPOSITORY);
    }

    private static Throwable rootCause(Throwable failure) {
        Throwable cause = failure;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause;
    }
}
