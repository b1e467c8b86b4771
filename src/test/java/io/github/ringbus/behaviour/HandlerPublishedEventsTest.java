package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.StageThreads;
import io.github.ringbus.PublishMode;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventhandling.EventBus;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.eventhandling.GenericEventMessage.asEventMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Events a command handler publishes on the event bus ({@code EventBus.publish}, beside
 * {@code AggregateLifecycle.apply}) are the command's events like those its aggregate applies: stored by the store
 * stage with the command's other events, in the order the handler produced them (as Axon's {@link SimpleCommandBus}
 * stores them), in the command's batch and transaction, and not at all when the command fails.
 */
class HandlerPublishedEventsTest {

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        Journal.eventBus = null;
        if (ring != null) {
            ring.close();
        }
    }

    @Test
    void publishedAndAppliedEventsAreStoredInTheOrderTheHandlerProducedThemAsOnSimpleCommandBus() {
        List<Object> onSimpleCommandBus = runOnSimpleCommandBus();

        ring = RingbusFixture.started();
        ring.bus.registerAggregate(Journal.class);
        Journal.eventBus = ring.eventStore;
        ring.sendAndWait(new Begin("j"));
        ring.sendAndWait(new Write("j", "first"));

        assertThat(ring.allStoredPayloads()).containsExactlyElementsOf(onSimpleCommandBus);
        assertThat(onSimpleCommandBus).containsSubsequence(
                new Written("j", 1), new Noted("j", "first"), new Written("j", 2));
    }

    @Test
    void eventsAPlainHandlerPublishesAreStoredByTheStoreStage() {
        ring = RingbusFixture.started();
        ring.bus.subscribe("note", command -> {
            ring.eventStore.publish(asEventMessage(new Noted("plain", "one")), asEventMessage(new Noted("plain", "two")));
            return "noted";
        });

        Object result = ring.send(RingbusFixture.namedCommand("note", "x")).awaitSuccess();

        assertThat(result).isEqualTo("noted");
        assertThat(ring.allStoredPayloads()).containsExactly(new Noted("plain", "one"), new Noted("plain", "two"));
        assertThat(ring.engine.storingThreads()).isNotEmpty().allSatisfy(
                thread -> assertThat(thread).matches(StageThreads::stores));
    }

    @Test
    void eventsAPlainHandlerPublishesBeforeItFailsAreNeitherStoredNorPublished() {
        ring = RingbusFixture.started();
        List<Object> published = new CopyOnWriteArrayList<>();
        ring.ringEventStore().subscribe(events -> events.forEach(e -> published.add(e.getPayload())));
        ring.bus.subscribe("note", command -> {
            ring.eventStore.publish(asEventMessage(new Noted("plain", "lost")));
            throw new IllegalStateException("handler fails after publishing");
        });

        Throwable failure = ring.send(RingbusFixture.namedCommand("note", "x")).awaitFailure();

        assertThat(failure).hasMessageContaining("handler fails after publishing");
        ring.assertStillHandlesValidCommands();
        assertThat(ring.allStoredPayloads()).doesNotContain(new Noted("plain", "lost"));
        assertThat(published).doesNotContain(new Noted("plain", "lost"));
    }

    /**
     * The store refuses the aggregate's events of a command whose handler also published an event: the command fails,
     * and its published event is neither stored, nor seen by a tracking processor, nor handed to a subscriber (the
     * subscriber is asserted in {@link PublishMode#AFTER_STORE}, where subscribers get only what was stored; in the
     * other modes they may see events whose append fails, see PublishMode).
     */
    @Test
    void eventsPublishedByACommandWhoseAggregateEventsTheStoreRefusesAreNotStoredTrackedOrPublished()
            throws Exception {
        ring = RingbusFixture.started(b -> b.publishMode(PublishMode.AFTER_STORE));
        ring.bus.registerAggregate(Journal.class);
        Journal.eventBus = ring.eventStore;
        List<Object> published = new CopyOnWriteArrayList<>();
        ring.ringEventStore().subscribe(events -> events.forEach(e -> published.add(e.getPayload())));
        ring.sendAndWait(new Begin("j"));
        ring.engine.refuse(new Written("j", 1));

        try (TrackedPayloads tracked = new TrackedPayloads(ring.eventStore)) {
            Throwable failure = ring.send(new Write("j", "refused")).awaitFailure();
            ring.sendAndWait(new Begin("k"));
            ring.sendAndWait(new Write("k", "after"));

            assertThat(failure).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("value refused");
            assertThat(tracked.awaitThrough(new Written("k", 2))).doesNotContain(new Noted("j", "refused"));
        }
        assertThat(ring.allStoredPayloads()).doesNotContain(new Noted("j", "refused"));
        assertThat(published).doesNotContain(new Noted("j", "refused")).contains(new Noted("k", "after"));
    }

    @Test
    void eventsPublishedByACommandWhoseAggregateEventsTheStoreRefusesAreNotStoredOrTrackedByDefault()
            throws Exception {
        ring = RingbusFixture.started();
        ring.bus.registerAggregate(Journal.class);
        Journal.eventBus = ring.eventStore;
        ring.sendAndWait(new Begin("j"));
        ring.engine.refuse(new Written("j", 1));

        try (TrackedPayloads tracked = new TrackedPayloads(ring.eventStore)) {
            ring.send(new Write("j", "refused")).awaitFailure();
            ring.sendAndWait(new Begin("k"));
            ring.sendAndWait(new Write("k", "after"));

            assertThat(tracked.awaitThrough(new Written("k", 2))).doesNotContain(new Noted("j", "refused"));
        }
        assertThat(ring.allStoredPayloads()).doesNotContain(new Noted("j", "refused"));
    }

    /**
     * Axon's own {@link EmbeddedEventStore} (not a {@code RingEventStore}): what a handler publishes on it keeps its
     * place among the events its aggregate applied, as on {@link SimpleCommandBus}, and is stored with the command.
     */
    @Test
    void onAxonsEmbeddedEventStorePublishedAndAppliedEventsAreStoredInTheHandlersOrderAsOnSimpleCommandBus() {
        List<Object> onSimpleCommandBus = runOnSimpleCommandBus();

        ring = RingbusFixture.startedOnEmbeddedEventStore();
        ring.bus.registerAggregate(Journal.class);
        Journal.eventBus = ring.eventStore;
        ring.sendAndWait(new Begin("j"));
        ring.sendAndWait(new Write("j", "first"));

        assertThat(ring.allStoredPayloads()).containsExactlyElementsOf(onSimpleCommandBus);
    }

    /**
     * As Axon's {@code EventPublicationOrderTest} (integration tests) has it: an external command handler loads an
     * aggregate from its repository, has it apply an event, publishes one on the event store, and has the aggregate
     * apply another; the published event is stored between the two, on Axon's {@link EmbeddedEventStore} too.
     */
    @Test
    void onAxonsEmbeddedEventStoreAnExternalHandlersPublishedEventIsStoredBetweenTheAppliedEventsAroundIt() {
        ring = RingbusFixture.startedOnEmbeddedEventStore();
        Repository<Journal> journals = ring.bus.registerAggregate(Journal.class);
        EmbeddedEventStore store = ring.eventStore;
        ring.bus.subscribe("write twice", command -> {
            journals.load("j").execute(journal -> journal.writePart(1));
            store.publish(asEventMessage(new Noted("j", "between")));
            journals.load("j").execute(journal -> journal.writePart(2));
            return "written";
        });
        Journal.eventBus = store;
        ring.sendAndWait(new Begin("j"));

        assertThat(ring.send(RingbusFixture.namedCommand("write twice", "j")).awaitSuccess()).isEqualTo("written");

        // Axon hands on what a creating constructor applies once it returned, after what it published (as on
        // SimpleCommandBus, asserted above): Noted "begun" comes first.
        assertThat(ring.allStoredPayloads()).containsExactly(
                new Noted("j", "begun"), new Begun("j"),
                new Written("j", 1), new Noted("j", "between"), new Written("j", 2));
    }

    @Test
    void onAxonsEmbeddedEventStoreEventsAPlainHandlerPublishesBeforeItFailsAreNotStored() {
        ring = RingbusFixture.startedOnEmbeddedEventStore();
        ring.bus.subscribe("note", command -> {
            ring.eventStore.publish(asEventMessage(new Noted("plain", "lost")));
            throw new IllegalStateException("handler fails after publishing");
        });

        Throwable failure = ring.send(RingbusFixture.namedCommand("note", "x")).awaitFailure();

        assertThat(failure).hasMessageContaining("handler fails after publishing");
        ring.assertStillHandlesValidCommands();
        assertThat(ring.allStoredPayloads()).doesNotContain(new Noted("plain", "lost"));
    }

    /** The store refuses the aggregate's events: what the handler published with them is not stored either. */
    @Test
    void onAxonsEmbeddedEventStoreEventsPublishedByACommandWhoseAggregateEventsTheStoreRefusesAreNotStored() {
        ring = RingbusFixture.startedOnEmbeddedEventStore();
        ring.bus.registerAggregate(Journal.class);
        Journal.eventBus = ring.eventStore;
        ring.sendAndWait(new Begin("j"));
        ring.engine.refuse(new Written("j", 1));

        Throwable failure = ring.send(new Write("j", "refused")).awaitFailure();

        assertThat(failure).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("value refused");
        assertThat(ring.allStoredPayloads()).containsExactly(new Noted("j", "begun"), new Begun("j"));
    }

    private static List<Object> runOnSimpleCommandBus() {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(engine).build();
        try {
            SimpleCommandBus bus = SimpleCommandBus.builder().build();
            AggregateAnnotationCommandHandler.<Journal>builder()
                                             .aggregateType(Journal.class)
                                             .repository(EventSourcingRepository.builder(Journal.class)
                                                                                .eventStore(store)
                                                                                .build())
                                             .build()
                                             .subscribe(bus);
            Journal.eventBus = store;
            CommandGateway gateway = DefaultCommandGateway.builder().commandBus(bus).build();
            gateway.sendAndWait(new Begin("j"));
            gateway.sendAndWait(new Write("j", "first"));
            try (Stream<? extends TrackedEventMessage<?>> all = engine.readEvents(null, false)) {
                return all.map(EventMessage::getPayload).collect(Collectors.toList());
            }
        } finally {
            Journal.eventBus = null;
            store.shutDown();
        }
    }

    record Begin(@TargetAggregateIdentifier String journalId) {
    }

    record Write(@TargetAggregateIdentifier String journalId, String note) {
    }

    record Begun(String journalId) {
    }

    record Written(String journalId, int part) {
    }

    record Noted(String journalId, String note) {
    }

    /** An aggregate whose handlers publish an event on the event bus between the events they apply. */
    static class Journal {

        /** The event bus the handlers publish on (set by the test). */
        static volatile EventBus eventBus;

        @AggregateIdentifier
        private String journalId;

        protected Journal() {
        }

        @CommandHandler
        Journal(Begin command) {
            apply(new Begun(command.journalId()));
            eventBus.publish(asEventMessage(new Noted(command.journalId(), "begun")));
        }

        @CommandHandler
        void handle(Write command) {
            apply(new Written(journalId, 1));
            eventBus.publish(asEventMessage(new Noted(journalId, command.note())));
            apply(new Written(journalId, 2));
        }

        /** What an external handler has the loaded aggregate do. */
        void writePart(int part) {
            apply(new Written(journalId, part));
        }

        @EventSourcingHandler
        void on(Begun event) {
            this.journalId = event.journalId();
        }
    }
}
