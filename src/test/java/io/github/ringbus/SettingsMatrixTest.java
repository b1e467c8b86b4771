package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * The ring's core promises under every topology, wait strategy and publish mode (and, on FULL, one store thread or
 * three), not only the defaults: every
 * callback once; a failed command stores and publishes nothing and the aggregate goes on from the successful ones;
 * per-aggregate order and gapless sequences with several dispatchers; subscribers see every stored event once;
 * shutdown completes every command in flight.
 */
class SettingsMatrixTest {

    static Stream<Arguments> settings() {
        List<Arguments> all = new ArrayList<>();
        for (Topology topology : Topology.values()) {
            for (WaitStrategyChoice waitStrategy : WaitStrategyChoice.values()) {
                for (PublishMode publishMode : PublishMode.values()) {
                    all.add(Arguments.of(topology, waitStrategy, publishMode, 1));
                    if (topology == Topology.FULL) {
                        all.add(Arguments.of(topology, waitStrategy, publishMode, 3));
                    }
                }
            }
        }
        return all.stream();
    }

    @ParameterizedTest(name = "{0}, {1}, {2}, {3} store thread(s)")
    @MethodSource("settings")
    void theRingKeepsItsPromises(Topology topology, WaitStrategyChoice waitStrategy, PublishMode publishMode,
                                 int storeThreads) throws Exception {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        RingEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
        List<Object> published = new CopyOnWriteArrayList<>();
        eventStore.subscribe(events -> events.forEach(event -> published.add(event.getPayload())));
        RingCommandBus bus = RingCommandBus.builder()
                                           .eventStore(eventStore)
                                           .topology(topology)
                                           .handlerThreads(topology == Topology.COMPACT ? 1 : 2)
                                           .storeThreads(storeThreads)
                                           .waitStrategy(waitStrategy)
                                           .publishMode(publishMode)
                                           .ringSize(64)
                                           .build();
        bus.registerAggregate(Account.class);
        bus.start();
        int accounts = 8;
        int dispatchers = 2;
        int perDispatcher = 300;
        ExecutorService pool = Executors.newFixedThreadPool(dispatchers);
        try {
            for (int a = 0; a < accounts; a++) {
                assertThat(send(bus, new Open("acc-" + a)).isExceptional()).isFalse();
            }
            assertThat(send(bus, new DepositThenFail("acc-0", 1_000_000_000L)).isExceptional()).isTrue();

            List<Future<List<CountingCallback>>> sent = new ArrayList<>();
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                sent.add(pool.submit(() -> {
                    List<CountingCallback> callbacks = new ArrayList<>();
                    for (int i = 0; i < perDispatcher; i++) {
                        CountingCallback callback = new CountingCallback();
                        bus.dispatch(asCommandMessage(new Deposit("acc-" + (i % accounts),
                                                                  (dispatcher + 1) * 1_000_000L + i)), callback);
                        callbacks.add(callback);
                    }
                    return callbacks;
                }));
            }
            List<CountingCallback> all = new ArrayList<>();
            for (Future<List<CountingCallback>> dispatcher : sent) {
                all.addAll(dispatcher.get(60, TimeUnit.SECONDS));
            }
            bus.shutdown();

            assertThat(all).allMatch(callback -> callback.results.size() == 1);
            assertThat(all).allMatch(callback -> !callback.results.get(0).isExceptional());
            List<Long> allDeposits = new ArrayList<>();
            for (int a = 0; a < accounts; a++) {
                List<? extends DomainEventMessage<?>> events =
                        engine.readEvents("acc-" + a).asStream().collect(Collectors.toList());
                for (int i = 0; i < events.size(); i++) {
                    assertThat(events.get(i).getSequenceNumber()).isEqualTo(i);
                }
                Map<Long, Long> lastOfDispatcher = new ConcurrentHashMap<>();
                for (EventMessage<?> event : events) {
                    if (event.getPayload() instanceof Deposited deposited) {
                        allDeposits.add(deposited.amount());
                        Long previous = lastOfDispatcher.put(deposited.amount() / 1_000_000L, deposited.amount());
                        assertThat(previous == null || previous < deposited.amount())
                                .as("per-dispatcher order on acc-%d", a).isTrue();
                    }
                }
            }
            assertThat(allDeposits).hasSize(dispatchers * perDispatcher)
                                   .doesNotHaveDuplicates()
                                   .doesNotContain(1_000_000_000L);
            List<Long> publishedDeposits = published.stream().filter(p -> p instanceof Deposited)
                                                    .map(p -> ((Deposited) p).amount()).collect(Collectors.toList());
            // No append fails here (the failing command fails in its handler), so in every mode subscribers see exactly
            // what was stored, each event once.
            assertThat(publishedDeposits).containsExactlyInAnyOrderElementsOf(allDeposits).doesNotHaveDuplicates();
        } finally {
            pool.shutdownNow();
            bus.shutdown();
            eventStore.shutDown();
        }
    }

    private static CommandResultMessage<?> send(RingCommandBus bus, Object command) throws Exception {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(asCommandMessage(command), callback);
        return callback.get(30, TimeUnit.SECONDS);
    }

    /** Records every call, to check each callback is called once. */
    private static final class CountingCallback implements CommandCallback<Object, Object> {

        private final List<CommandResultMessage<?>> results = new CopyOnWriteArrayList<>();

        @Override
        public void onResult(CommandMessage<?> command, CommandResultMessage<?> result) {
            results.add(result);
        }
    }
}
