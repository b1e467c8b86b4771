package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.common.Registration;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * A ringbus on a {@link FaultyStorageEngine} (Axon's in-memory engine with appends that fail on demand), with the
 * {@link Account} and {@link Tally} aggregates registered, and the helpers the behaviour specifications share.
 */
final class BehaviourRing implements AutoCloseable {

    /** The name under which {@link #blockingHandler} is subscribed by the tests that need it. */
    static final String BLOCK = "block";

    final FaultyStorageEngine engine = new FaultyStorageEngine();
    final EmbeddedEventStore eventStore;
    final RingCommandBus bus;
    private final AtomicInteger probes = new AtomicInteger();

    private BehaviourRing(UnaryOperator<RingCommandBus.Builder> settings,
                          Function<EventStorageEngine, EmbeddedEventStore> store,
                          boolean start) {
        this.eventStore = store.apply(engine);
        this.bus = settings.apply(RingCommandBus.builder().eventStore(eventStore)).build();
        bus.registerAggregate(Account.class);
        bus.registerAggregate(Tally.class);
        if (start) {
            bus.start();
        }
    }

    /** A started ring with default settings on a {@link RingEventStore}. */
    static BehaviourRing started() {
        return started(b -> b);
    }

    /** A started ring with the given settings on a {@link RingEventStore}. */
    static BehaviourRing started(UnaryOperator<RingCommandBus.Builder> settings) {
        return new BehaviourRing(settings, BehaviourRing::ringEventStore, true);
    }

    /** A ring that was built but not started. */
    static BehaviourRing notStarted() {
        return notStarted(b -> b);
    }

    /** A ring with the given settings that was built but not started. */
    static BehaviourRing notStarted(UnaryOperator<RingCommandBus.Builder> settings) {
        return new BehaviourRing(settings, BehaviourRing::ringEventStore, false);
    }

    /** A started ring on Axon's plain {@link EmbeddedEventStore}, where the store stage appends and publishes. */
    static BehaviourRing startedOnEmbeddedEventStore() {
        return new BehaviourRing(b -> b, engine -> EmbeddedEventStore.builder().storageEngine(engine).build(), true);
    }

    private static EmbeddedEventStore ringEventStore(EventStorageEngine engine) {
        return RingEventStore.builder().storageEngine(engine).build();
    }

    /** The event store as a {@link RingEventStore}, for the rings that were built on one. */
    RingEventStore ringEventStore() {
        return (RingEventStore) eventStore;
    }

    // --- dispatching ------------------------------------------------------------------------------------------------

    /** Dispatches the payload as a command named after its class; returns the callback's record. */
    Outcome send(Object payload) {
        return send(asCommandMessage(payload));
    }

    /** Dispatches the command; returns the callback's record. */
    Outcome send(CommandMessage<?> command) {
        Outcome outcome = new Outcome();
        bus.dispatch(command, outcome);
        return outcome;
    }

    /** Dispatches and waits (at most 10 s) for the callback; returns the result so that failures can be asserted. */
    CommandResultMessage<?> sendAndWait(Object payload) {
        Outcome outcome = send(payload);
        CommandResultMessage<?> result = outcome.await();
        assertThat(outcome.calls()).as("callback calls of %s", payload).isEqualTo(1);
        return result;
    }

    /**
     * Dispatches the commands so that the store stage takes them as one batch: the append of the gate command (a
     * command of its own, which must store events) is held in the engine until every one of the commands was handled,
     * and the handle stage has had a moment to publish its progress. Returns the commands' callbacks, in order; the
     * gate command must succeed.
     */
    List<Outcome> sendAsOneBatch(Object gate, Object... commands) throws InterruptedException {
        return sendAsOneBatch(gate, () -> {
        }, commands);
    }

    /** As {@link #sendAsOneBatch(Object, Object...)}, running {@code whileGateHeld} once the gate's append is held. */
    List<Outcome> sendAsOneBatch(Object gate, Runnable whileGateHeld, Object... commands)
            throws InterruptedException {
        AtomicInteger handled = new AtomicInteger();
        Registration counting = bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            try {
                return chain.proceed();
            } finally {
                handled.incrementAndGet();
            }
        });
        try {
            FaultyStorageEngine.HeldAppend held = engine.holdNextAppend();
            Outcome gateOutcome = send(gate);
            held.awaitStarted();
            whileGateHeld.run();
            List<Outcome> outcomes = new ArrayList<>();
            for (Object command : commands) {
                outcomes.add(send(command));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (handled.get() < commands.length + 1) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("only " + handled.get() + " of " + (commands.length + 1) + " handled");
                }
                Thread.sleep(1);
            }
            // The handle stage publishes its progress right after its last handler returned.
            Thread.sleep(250);
            held.release();
            gateOutcome.awaitSuccess();
            return outcomes;
        } finally {
            counting.cancel();
        }
    }

    /**
     * Asserts that nothing is blocked or broken: a fresh account can be opened and a deposit on it returns its
     * balance.
     */
    void assertStillHandlesValidCommands() {
        String account = "probe-" + probes.incrementAndGet();
        awaitFreeSlot();
        CommandResultMessage<?> opened = sendAndWait(new AccountCommands.Open(account));
        assertThat(opened.isExceptional()).as("open %s after the failure: %s", account, opened).isFalse();
        awaitFreeSlot();
        CommandResultMessage<?> deposited = sendAndWait(new AccountCommands.Deposit(account, 3));
        assertThat(deposited.isExceptional()).as("deposit on %s after the failure: %s", account, deposited).isFalse();
        assertThat(deposited.getPayload()).isEqualTo(3L);
    }

    /**
     * Waits (at most 5 s) for a free slot: the complete stage frees a slot just after its callback returns, so on a
     * FAIL_FAST ring a probe sent right after the callbacks of a full ring could still be refused.
     */
    private void awaitFreeSlot() {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (bus.remainingCapacity() == 0 && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
    }

    // --- the store ---------------------------------------------------------------------------------------------------

    /** The payloads of every event stored for the aggregate, in sequence order, read from the storage engine. */
    List<Object> storedPayloads(String aggregateId) {
        return storedEvents(aggregateId).stream().map(DomainEventMessage::getPayload).collect(Collectors.toList());
    }

    /** The sequence numbers of every event stored for the aggregate, in order, read from the storage engine. */
    List<Long> storedSequenceNumbers(String aggregateId) {
        return storedEvents(aggregateId).stream().map(DomainEventMessage::getSequenceNumber)
                                        .collect(Collectors.toList());
    }

    /** The payloads of every event in the storage engine, of any aggregate, in the order they were appended. */
    List<Object> allStoredPayloads() {
        try (Stream<? extends TrackedEventMessage<?>> all = engine.readEvents(null, false)) {
            return all.map(TrackedEventMessage::getPayload).collect(Collectors.toList());
        }
    }

    List<? extends DomainEventMessage<?>> storedEvents(String aggregateId) {
        return engine.readEvents(aggregateId).asStream().collect(Collectors.toList());
    }

    /**
     * Shuts the bus and the store down; fails (rather than hanging the test run) when the bus does not shut down
     * within 20 s, which only happens when a test has left it stuck.
     */
    @Override
    public void close() {
        engine.releaseAll();
        Thread shutdown = new Thread(bus::shutdown, "behaviour-ring-shutdown");
        shutdown.setDaemon(true);
        shutdown.start();
        try {
            shutdown.join(TimeUnit.SECONDS.toMillis(20));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (shutdown.isAlive()) {
            throw new AssertionError("the bus did not shut down within 20 s");
        }
        eventStore.shutDown();
    }

    // --- plain handlers that block -----------------------------------------------------------------------------------

    /** A command with the given name and payload, for a handler subscribed under that name. */
    static CommandMessage<Object> namedCommand(String name, Object payload) {
        return new GenericCommandMessage<>(new GenericMessage<>(payload), name);
    }

    /** A command for the handler subscribed under {@link #BLOCK}. */
    static CommandMessage<Object> blockCommand(Object payload) {
        return new GenericCommandMessage<>(new GenericMessage<>(payload), BLOCK);
    }

    /**
     * A plain (non-aggregate) handler that waits for the latch (at most 10 s, then fails) and returns the command's
     * payload.
     */
    static MessageHandler<CommandMessage<?>> blockingHandler(CountDownLatch release) {
        return command -> {
            if (!release.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("blocking handler was never released");
            }
            return command.getPayload();
        };
    }

    /**
     * The callback of one command: records how often it was called, on which thread, and the first result.
     */
    static final class Outcome implements CommandCallback<Object, Object> {

        private final CompletableFuture<CommandResultMessage<?>> result = new CompletableFuture<>();
        private final AtomicInteger calls = new AtomicInteger();
        private volatile String thread;

        @Override
        public void onResult(CommandMessage<?> commandMessage, CommandResultMessage<?> commandResultMessage) {
            calls.incrementAndGet();
            thread = Thread.currentThread().getName();
            result.complete(commandResultMessage);
        }

        /** Waits at most 10 s for the callback. */
        CommandResultMessage<?> await() {
            try {
                return result.get(10, TimeUnit.SECONDS);
            } catch (Exception e) {
                throw new AssertionError("the callback was not called within 10 s", e);
            }
        }

        boolean isDone() {
            return result.isDone();
        }

        int calls() {
            return calls.get();
        }

        /** The name of the thread the callback was (last) called on. */
        String thread() {
            return thread;
        }

        /** Waits for the callback and returns the failure it reported; fails when it reported success. */
        Throwable awaitFailure() {
            CommandResultMessage<?> message = await();
            assertThat(message.isExceptional()).as("expected a failure but got %s", message).isTrue();
            return message.exceptionResult();
        }

        /** Waits for the callback and returns the value it reported; fails when it reported a failure. */
        Object awaitSuccess() {
            CommandResultMessage<?> message = await();
            if (message.isExceptional()) {
                throw new AssertionError("expected success but the command failed", message.exceptionResult());
            }
            return message.getPayload();
        }
    }

    /**
     * A second event-sourced aggregate: a tally of numbers. One command applies several events, one names no target
     * aggregate at all, and one fails after applying with a checked exception.
     */
    static class Tally {

        @AggregateIdentifier
        private String id;
        private long total;

        protected Tally() {
        }

        @CommandHandler
        Tally(Start command) {
            apply(new Started(command.tallyId()));
        }

        /** Applies one {@link Added} per value, in order; returns the new total. */
        @CommandHandler
        long handle(AddAll command) {
            for (long value : command.values()) {
                apply(new Added(id, value));
            }
            return total;
        }

        /** A non-creation command whose class has no {@code @TargetAggregateIdentifier}. */
        @CommandHandler
        long handle(Unaddressed command) {
            return total;
        }

        /** Applies the value, then fails with a checked exception (which by default does not roll back). */
        @CommandHandler
        void handle(AddThenFailChecked command) throws TallyException {
            apply(new Added(id, command.value()));
            throw new TallyException("checked failure after adding " + command.value() + " to " + id);
        }

        @EventSourcingHandler
        void on(Started event) {
            this.id = event.tallyId();
        }

        @EventSourcingHandler
        void on(Added event) {
            this.total += event.value();
        }

        record Start(@TargetAggregateIdentifier String tallyId) {
        }

        record AddAll(@TargetAggregateIdentifier String tallyId, List<Long> values) {
        }

        record Unaddressed(String tallyId) {
        }

        record AddThenFailChecked(@TargetAggregateIdentifier String tallyId, long value) {
        }

        record Started(String tallyId) {
        }

        record Added(String tallyId, long value) {
        }

        static class TallyException extends Exception {

            private static final long serialVersionUID = 1L;

            TallyException(String message) {
                super(message);
            }
        }
    }
}
