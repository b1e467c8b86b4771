package io.github.ringbus.behaviour;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import org.axonframework.commandhandling.AnnotationCommandHandlerAdapter;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.AggregateNotFoundException;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Axon's external command handler: a component (not an aggregate) with a {@code @CommandHandler} that takes the
 * aggregate's {@link Repository}, loads an aggregate and changes it ({@code repository.load(id).execute(...)}), as
 * Axon's reference guide shows and real applications do (a cart published by a process). On SimpleCommandBus the
 * aggregate is loaded and its events stored with the command; on ringbus the same, on every topology, in ring order
 * with the aggregate's own commands: a command that names the aggregate with {@code @TargetAggregateIdentifier} runs
 * on the thread that owns it, with the aggregate preloaded; on {@code COMPACT} (the one handler thread owns every
 * aggregate) any aggregate it loads is lent to it in place. Every scenario runs on both buses and is compared.
 */
class ExternalCommandHandlerTest {

    /** How each scenario's ring is built. */
    enum Shape {
        COMPACT(b -> b.topology(Topology.COMPACT)),
        COMPACT_CACHE_1(b -> b.topology(Topology.COMPACT).cacheSize(1)),
        FULL_ONE_HANDLER_THREAD(b -> b.topology(Topology.FULL).handlerThreads(1)),
        FULL_THREE_HANDLER_THREADS(b -> b.topology(Topology.FULL).handlerThreads(3).storeThreads(2)),
        FULL_CACHE_1(b -> b.topology(Topology.FULL).handlerThreads(2).cacheSize(1));

        final UnaryOperator<RingCommandBus.Builder> settings;

        Shape(UnaryOperator<RingCommandBus.Builder> settings) {
            this.settings = settings;
        }
    }

    private RingCommandBus ring;
    private FaultyStorageEngine ringEngine;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.shutdown();
        }
    }

    @ParameterizedTest
    @EnumSource(Shape.class)
    void anExternalHandlerLoadsTheAggregateItsCommandNamesAndItsEventsAreStored(Shape shape) {
        assertSameOnBothBuses(shape, List.of(new CreateCart("c1"), new AddItem("c1", "tea"), new AddItem("c1", "jam"),
                                             new PublishCart("c1"), new AddItem("c1", "late")));
    }

    @ParameterizedTest
    @EnumSource(Shape.class)
    void anExternalHandlersCommandRunsInRingOrderWithTheAggregatesOwnCommandsSentWithoutWaiting(Shape shape) {
        List<Object> commands = new ArrayList<>();
        for (int cart = 0; cart < 6; cart++) {
            commands.add(new CreateCart("c" + cart));
        }
        for (int round = 0; round < 4; round++) {
            for (int cart = 0; cart < 6; cart++) {
                commands.add(new AddItem("c" + cart, "item" + round));
                if (round == cart % 4) {
                    commands.add(new PublishCart("c" + cart)); // then the later items are refused
                }
            }
        }
        assertSameOnBothBuses(shape, commands);
    }

    @ParameterizedTest
    @EnumSource(Shape.class)
    void anExternalHandlerLoadingAMissingAggregateGetsAggregateNotFoundAndMayCatchIt(Shape shape) {
        assertSameOnBothBuses(shape, List.of(new PublishCart("none"), new PublishIfPresent("none"),
                                             new CreateCart("c1"), new PublishIfPresent("c1"),
                                             new PublishIfPresent("c1")));
    }

    @ParameterizedTest
    @EnumSource(Shape.class)
    void anExternalHandlerThatFailsAfterChangingTheAggregateLeavesItAsItWas(Shape shape) {
        assertSameOnBothBuses(shape, List.of(new CreateCart("c1"), new AddItem("c1", "tea"),
                                             new PublishThenFail("c1"), new AddItem("c1", "jam"),
                                             new PublishCart("c1")));
    }

    @ParameterizedTest
    @EnumSource(Shape.class)
    void anExternalHandlerLoadsAnAggregateOnTheFirstCommandAfterStartWhileItIsOnlyInTheStore(Shape shape) {
        // The carts are created through another bus first: the ring's caches have never seen them.
        assertSameOnBothBuses(shape, List.of(new PublishCart("c1"), new AddItem("c1", "late"), new PublishCart("c2")),
                              List.of(new CreateCart("c1"), new AddItem("c1", "tea"), new CreateCart("c2")));
    }

    /**
     * The handler loads a cart and changes it, then waits for a command of that very cart (which runs in place, on
     * the changed cart, as on SimpleCommandBus); whatever the cache size, the topology or what the nested command's
     * handler answers (here: its count of items, then its refusal of a published cart).
     */
    @ParameterizedTest
    @EnumSource(Shape.class)
    void anExternalHandlerThatWaitsForACommandOfTheAggregateItChangedHasItRunOnTheChangedAggregate(Shape shape) {
        assertSameOnBothBuses(shape, List.of(new CreateCart("c1"), new AddItem("c1", "tea"),
                                             new AddThenWait("c1", "jam", "honey"),
                                             new PublishThenWait("c1", "late"), new AddItem("c1", "later")));
    }

    /** As above, from a command that names no target: on COMPACT, where the one handler thread owns every cart. */
    @ParameterizedTest
    @EnumSource(value = Shape.class, names = {"COMPACT", "COMPACT_CACHE_1"})
    void onCompactAnExternalHandlerWithoutANamedTargetThatWaitsForACommandOfTheAggregateItChangedHasItRunThere(
            Shape shape) {
        assertSameOnBothBuses(shape, List.of(new CreateCart("c1"), new CreateCart("c2"), new AddItem("c1", "tea"),
                                             new AddThenWaitUnnamed("c1", "jam", "honey"), new AddItem("c2", "x"),
                                             new AddThenWaitUnnamed("c1", "rum", "FAIL"), new AddItem("c1", "wine"),
                                             new PublishThenWaitUnnamed("c1", "late"), new AddItem("c1", "later")));
    }

    /** Without a named target, the handler thread cannot be chosen by aggregate: on COMPACT it owns them all. */
    @ParameterizedTest
    @EnumSource(value = Shape.class, names = {"COMPACT", "COMPACT_CACHE_1"})
    void onCompactAnExternalHandlerLoadsAnyAggregateEvenWithoutANamedTarget(Shape shape) {
        assertSameOnBothBuses(shape, List.of(new CreateCart("c1"), new CreateCart("c2"), new AddItem("c2", "tea"),
                                             new PublishBoth("c1", "c2"), new AddItem("c2", "late"),
                                             new PublishBoth("c1", "none")));
    }

    /**
     * A command that names an identifier for routing only (its handler loads nothing) costs the store one read per
     * command on FULL with several aggregate types, to find the type it names: never skipped, since the next command
     * of the name may load an aggregate that exists ({@code model.ExternalHandlerScenarioTest}).
     */
    @org.junit.jupiter.api.Test
    void aPlainCommandThatNamesAnIdentifierItNeverLoadsCostsOneReadOfTheStoreEach() {
        ringEngine = new FaultyStorageEngine();
        ring = RingCommandBus.builder().eventStore(RingEventStore.builder().storageEngine(ringEngine).build())
                             .topology(Topology.FULL).handlerThreads(2).build();
        ring.registerAggregate(Cart.class);
        new AnnotationCommandHandlerAdapter<>(new Notes()).subscribe(ring);
        ring.start();
        ringEngine.countReadsFromNow();

        for (int i = 0; i < 100; i++) {
            assertThat(send(ring, new Note("note-" + i))).isEqualTo("noted note-" + i);
        }

        assertThat(ringEngine.readingThreads()).hasSize(100);
    }

    record Note(@TargetAggregateIdentifier String id) {
    }

    static class Notes {
        @CommandHandler
        String handle(Note note) {
            return "noted " + note.id();
        }
    }

    // --- running a scenario on both buses --------------------------------------------------------------------------

    private void assertSameOnBothBuses(Shape shape, List<Object> commands) {
        assertSameOnBothBuses(shape, commands, List.of());
    }

    /**
     * Runs {@code before} on a SimpleCommandBus over the ring's store, then starts the ring and sends it every
     * command without waiting; the twin runs both lists one after the other. Results and stored streams must match.
     */
    private void assertSameOnBothBuses(Shape shape, List<Object> commands, List<Object> before) {
        ringEngine = new FaultyStorageEngine();
        RingEventStore ringStore = RingEventStore.builder().storageEngine(ringEngine).build();
        SimpleCommandBus setUp = simpleBus(ringStore);
        before.forEach(command -> send(setUp, command));
        ring = shape.settings.apply(RingCommandBus.builder().eventStore(ringStore)
                                                  .shutdownTimeout(Duration.ofSeconds(5))).build();
        Repository<Cart> carts = ring.registerAggregate(Cart.class);
        new AnnotationCommandHandlerAdapter<>(new CartPublisher(carts, ring)).subscribe(ring);
        ring.start();
        List<CompletableFuture<String>> pending = commands.stream().map(command -> dispatch(ring, command))
                                                          .collect(Collectors.toList());
        List<String> onRing = pending.stream().map(f -> f.orTimeout(20, TimeUnit.SECONDS).join())
                                     .collect(Collectors.toList());
        Map<String, List<String>> ringStreams = streams(ringStore, commands, before);

        EmbeddedEventStore twinStore = EmbeddedEventStore.builder().storageEngine(new FaultyStorageEngine()).build();
        SimpleCommandBus twin = simpleBus(twinStore);
        before.forEach(command -> send(twin, command));
        List<String> expected = commands.stream().map(command -> send(twin, command)).collect(Collectors.toList());

        assertThat(onRing).as("results on ringbus (%s), command by command", shape).isEqualTo(expected);
        assertThat(ringStreams).as("stored streams on ringbus (%s)", shape)
                               .isEqualTo(streams(twinStore, commands, before));
    }

    private static SimpleCommandBus simpleBus(EventStore eventStore) {
        SimpleCommandBus bus = SimpleCommandBus.builder().build();
        EventSourcingRepository<Cart> carts = EventSourcingRepository.builder(Cart.class).eventStore(eventStore).build();
        AggregateAnnotationCommandHandler.<Cart>builder().aggregateType(Cart.class).repository(carts).build()
                                         .subscribe(bus);
        new AnnotationCommandHandlerAdapter<>(new CartPublisher(carts, bus)).subscribe(bus);
        return bus;
    }

    private static CompletableFuture<String> dispatch(CommandBus bus, Object command) {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(asCommandMessage(command), callback);
        return callback.thenApply(ExternalCommandHandlerTest::describe);
    }

    private static String send(CommandBus bus, Object command) {
        return dispatch(bus, command).orTimeout(20, TimeUnit.SECONDS).join();
    }

    private static String describe(CommandResultMessage<?> result) {
        if (!result.isExceptional()) {
            return String.valueOf(result.getPayload());
        }
        Throwable failure = result.exceptionResult();
        return failure.getClass().getSimpleName() + ": " + failure.getMessage();
    }

    /** Every cart's stored events: sequence number and payload. */
    private static Map<String, List<String>> streams(EventStore store, List<Object> commands, List<Object> before) {
        Map<String, List<String>> streams = new TreeMap<>();
        for (Object command : concat(before, commands)) {
            for (String id : ((CartCommand) command).carts()) {
                streams.computeIfAbsent(id, cart -> store.readEvents(cart).asStream()
                                                         .map(e -> e.getSequenceNumber() + ":" + e.getPayload())
                                                         .collect(Collectors.toList()));
            }
        }
        return streams;
    }

    private static List<Object> concat(List<Object> first, List<Object> second) {
        List<Object> all = new ArrayList<>(first);
        all.addAll(second);
        return all;
    }

    // --- the application --------------------------------------------------------------------------------------------

    interface CartCommand {
        List<String> carts();
    }

    record CreateCart(@TargetAggregateIdentifier String id) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    record AddItem(@TargetAggregateIdentifier String id, String item) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    /** Handled by {@link CartPublisher}, not by the cart. */
    record PublishCart(@TargetAggregateIdentifier String id) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    record PublishIfPresent(@TargetAggregateIdentifier String id) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    record PublishThenFail(@TargetAggregateIdentifier String id) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    /** Adds an item to the cart itself, then waits for an {@link AddItem} of the same cart. */
    record AddThenWait(@TargetAggregateIdentifier String id, String item, String waitedFor) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    /** Publishes the cart, then waits for an {@link AddItem} of the same cart (which the cart refuses). */
    record PublishThenWait(@TargetAggregateIdentifier String id, String waitedFor) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    /** {@link AddThenWait} naming no target. */
    record AddThenWaitUnnamed(String id, String item, String waitedFor) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    /** {@link PublishThenWait} naming no target. */
    record PublishThenWaitUnnamed(String id, String waitedFor) implements CartCommand {
        public List<String> carts() {
            return List.of(id);
        }
    }

    /** Names no target: publishes two carts. */
    record PublishBoth(String first, String second) implements CartCommand {
        public List<String> carts() {
            return List.of(first, second);
        }
    }

    record CartCreated(String id) {
    }

    record ItemAdded(String id, String item) {
    }

    record CartPublished(String id, int items) {
    }

    static class Cart {

        @AggregateIdentifier
        private String id;
        private final List<String> items = new ArrayList<>();
        private boolean published;

        Cart() {
        }

        @CommandHandler
        Cart(CreateCart command) {
            apply(new CartCreated(command.id()));
        }

        @CommandHandler
        int handle(AddItem command) {
            if (published) {
                throw new IllegalStateException("cart " + id + " is published");
            }
            apply(new ItemAdded(id, command.item()));
            if (command.item().equals("FAIL")) {
                throw new IllegalArgumentException("cart " + id + " refuses the item it just added");
            }
            return items.size();
        }

        void add(String item) {
            apply(new ItemAdded(id, item));
        }

        int publish() {
            if (published) {
                throw new IllegalStateException("cart " + id + " is published already");
            }
            apply(new CartPublished(id, items.size()));
            return items.size();
        }

        @EventSourcingHandler
        void on(CartCreated event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(ItemAdded event) {
            items.add(event.item());
        }

        @EventSourcingHandler
        void on(CartPublished event) {
            published = true;
        }
    }

    /** The external command handler: a component that is handed the carts' repository. */
    static class CartPublisher {

        private final Repository<Cart> carts;
        private final CommandGateway gateway;

        CartPublisher(Repository<Cart> carts, CommandBus bus) {
            this.carts = carts;
            this.gateway = DefaultCommandGateway.builder().commandBus(bus).build();
        }

        @CommandHandler
        String handle(AddThenWait command) {
            carts.load(command.id()).execute(cart -> cart.add(command.item()));
            return "then " + waitToAdd(command.id(), command.waitedFor());
        }

        @CommandHandler
        String handle(PublishThenWait command) {
            carts.load(command.id()).execute(Cart::publish);
            return "then " + waitToAdd(command.id(), command.waitedFor());
        }

        @CommandHandler
        String handle(AddThenWaitUnnamed command) {
            return handle(new AddThenWait(command.id(), command.item(), command.waitedFor()));
        }

        @CommandHandler
        String handle(PublishThenWaitUnnamed command) {
            return handle(new PublishThenWait(command.id(), command.waitedFor()));
        }

        private String waitToAdd(String id, String item) {
            try {
                return String.valueOf((Object) gateway.sendAndWait(new AddItem(id, item)));
            } catch (RuntimeException refused) {
                return refused.getClass().getSimpleName() + ": " + refused.getMessage();
            }
        }

        @CommandHandler
        int handle(PublishCart command) throws Exception {
            return carts.load(command.id()).invoke(Cart::publish);
        }

        @CommandHandler
        String handle(PublishIfPresent command) throws Exception {
            try {
                return "published " + carts.load(command.id()).invoke(Cart::publish);
            } catch (AggregateNotFoundException missing) {
                return "no cart " + command.id();
            } catch (IllegalStateException published) {
                return published.getMessage();
            }
        }

        @CommandHandler
        void handle(PublishThenFail command) {
            carts.load(command.id()).execute(Cart::publish);
            throw new IllegalStateException("fails after publishing " + command.id());
        }

        @CommandHandler
        String handle(PublishBoth command) {
            String first = describe(command.first());
            return first + ", " + describe(command.second());
        }

        private String describe(String id) {
            try {
                return String.valueOf(carts.load(id).invoke(Cart::publish));
            } catch (AggregateNotFoundException missing) {
                return "no cart " + id;
            } catch (IllegalStateException published) {
                return published.getMessage();
            }
        }
    }
}
