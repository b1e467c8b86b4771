package io.github.ringbus;

import io.github.ringbus.events.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.AggregateSnapshotter;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.Snapshotter;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/** Snapshots configured through the builder are taken off the pipeline and used when an aggregate is loaded. */
class SnapshotTest {

    private final InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
    private final RingEventStore store = RingEventStore.builder().storageEngine(engine).build();
    private final List<String> snapshotThreads = new CopyOnWriteArrayList<>();
    private final AggregateSnapshotter axonSnapshotter = AggregateSnapshotter.builder()
            .eventStore(store)
            .aggregateFactories(new GenericAggregateFactory<>(Account.class))
            .build();
    private final Snapshotter recordingSnapshotter = (type, id) -> {
        snapshotThreads.add(Thread.currentThread().getName());
        axonSnapshotter.scheduleSnapshot(type, id);
    };
    private RingCommandBus bus;

    @AfterEach
    void shutDown() {
        if (bus != null) {
            bus.shutdown();
        }
    }

    private RingCommandBus startBus() {
        RingCommandBus started = RingCommandBus.builder().eventStore(store).snapshotter(recordingSnapshotter, 5).build();
        started.registerAggregate(Account.class);
        started.start();
        return started;
    }

    private static Object send(RingCommandBus bus, Object command) throws Exception {
        CompletableFuture<CommandResultMessage<?>> result = new CompletableFuture<>();
        bus.dispatch(asCommandMessage(command), (message, resultMessage) -> result.complete(resultMessage));
        CommandResultMessage<?> message = result.get(10, TimeUnit.SECONDS);
        assertThat(message.isExceptional()).as("%s failed: %s", command, message.optionalExceptionResult())
                                           .isFalse();
        return message.getPayload();
    }

    private Optional<DomainEventMessage<?>> awaitSnapshot(String id) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Optional<DomainEventMessage<?>> snapshot = engine.readSnapshot(id);
        while (snapshot.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(10);
            snapshot = engine.readSnapshot(id);
        }
        return snapshot;
    }

    @Test
    void snapshotsAreTakenOnTheSnapshotThreadNotOnAPipelineThread() throws Exception {
        bus = startBus();
        send(bus, new Open("a"));
        for (int i = 1; i <= 10; i++) {
            send(bus, new Deposit("a", i));
        }

        assertThat(awaitSnapshot("a")).isPresent();
        assertThat(snapshotThreads).isNotEmpty().allMatch("ringbus-snapshot"::equals);
    }

    @Test
    void aggregateIsLoadedFromItsSnapshotAndLaterEvents() throws Exception {
        bus = startBus();
        send(bus, new Open("a"));
        for (int i = 1; i <= 10; i++) {
            send(bus, new Deposit("a", i));
        }
        assertThat(awaitSnapshot("a")).isPresent();
        bus.shutdown();

        bus = startBus(); // an empty cache: the preload stage reads snapshot and events from the store
        assertThat(send(bus, new Deposit("a", 100))).isEqualTo(155L);
    }
}
