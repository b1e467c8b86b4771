package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.GetBalance;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

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

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * {@link Topology#COMPACT}: the same stages on two threads keep the ring's guarantees.
 */
class CompactTopologyTest {

    private final InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
    private final RingEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
    private RingCommandBus bus;

    private RingCommandBus started(PublishMode publishMode) {
        bus = RingCommandBus.builder()
                            .eventStore(eventStore)
                            .topology(Topology.COMPACT)
                            .handlerThreads(1)
                            .publishMode(publishMode)
                            .waitStrategy(WaitStrategyChoice.ADAPTIVE)
                            .threadNamePrefix("compact")
                            .build();
        bus.registerAggregate(Account.class);
        bus.start();
        return bus;
    }

    @AfterEach
    void shutdown() {
        if (bus != null) {
            bus.shutdown();
        }
    }

    @Test
    void theStagesRunOnTwoThreadsBesideTheCallbackThread() throws Exception {
        started(PublishMode.PARALLEL);
        send(new Open("a"));

        List<String> names = Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                                   .filter(name -> name.startsWith("compact-") && !name.endsWith("-snapshot"))
                                   .sorted().collect(Collectors.toList());
        assertThat(names).containsExactly("compact-callbacks", "compact-preload-handle", "compact-store-complete");
    }

    @Test
    void compactWithMoreThanOneHandlerThreadIsRefusedWhenBuilt() {
        RingCommandBus.Builder builder = RingCommandBus.builder().eventStore(eventStore)
                                                       .topology(Topology.COMPACT).handlerThreads(2);
        assertThatThrownBy(builder::build).isInstanceOf(AxonConfigurationException.class)
                                          .hasMessageContaining("topology COMPACT")
                                          .hasMessageContaining("handlerThreads is 2");
    }

    @Test
    void aFailedCommandLeavesTheAggregateAsTheSuccessfulCommandsLeftIt() throws Exception {
        started(PublishMode.IN_TRANSACTION);
        send(new Open("a"));
        send(new Deposit("a", 10));
        FutureCallback<Object, Object> failing = new FutureCallback<>();
        bus.dispatch(asCommandMessage(new DepositThenFail("a", 5)), failing);
        assertThat(failing.get(10, TimeUnit.SECONDS).isExceptional()).isTrue();

        assertThat(send(new Deposit("a", 1))).isEqualTo(11L);
        assertThat(storedDeposits("a")).containsExactly(10L, 1L);
    }

    @Test
    void commandsFromManyDispatchersAreEachStoredOnceWithGaplessSequencesPerAggregate() throws Exception {
        started(PublishMode.IN_TRANSACTION);
        int accounts = 50;
        int dispatchers = 4;
        int depositsPerDispatcher = 2_000;
        for (int a = 0; a < accounts; a++) {
            send(new Open("acc-" + a));
        }
        ExecutorService pool = Executors.newFixedThreadPool(dispatchers);
        try {
            List<Future<List<FutureCallback<Object, Object>>>> sent = new ArrayList<>();
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                sent.add(pool.submit(() -> {
                    List<FutureCallback<Object, Object>> callbacks = new ArrayList<>();
                    for (int i = 0; i < depositsPerDispatcher; i++) {
                        FutureCallback<Object, Object> callback = new FutureCallback<>();
                        // Amounts tell dispatcher and order apart: per aggregate, one dispatcher's amounts rise.
                        bus.dispatch(asCommandMessage(new Deposit("acc-" + (i % accounts),
                                                                  dispatcher * 1_000_000L + i)), callback);
                        callbacks.add(callback);
                    }
                    return callbacks;
                }));
            }
            for (Future<List<FutureCallback<Object, Object>>> dispatcher : sent) {
                for (FutureCallback<Object, Object> callback : dispatcher.get(60, TimeUnit.SECONDS)) {
                    assertThat(callback.get(60, TimeUnit.SECONDS).isExceptional()).isFalse();
                }
            }
        } finally {
            pool.shutdownNow();
        }

        for (int a = 0; a < accounts; a++) {
            String id = "acc-" + a;
            List<DomainEventMessage<?>> events = engine.readEvents(id).asStream().collect(Collectors.toList());
            assertThat(events).hasSize(1 + dispatchers * depositsPerDispatcher / accounts);
            for (int i = 0; i < events.size(); i++) {
                assertThat(events.get(i).getSequenceNumber()).as("sequence of event %d of %s", i, id).isEqualTo(i);
            }
            Map<Long, Long> lastAmountOfDispatcher = new ConcurrentHashMap<>();
            for (Long amount : storedDeposits(id)) {
                Long previous = lastAmountOfDispatcher.put(amount / 1_000_000L, amount);
                assertThat(previous == null || previous < amount).as("per-dispatcher order on %s", id).isTrue();
            }
        }
    }

    @Test
    void subscribersSeeEachCommandsEventsBeforeItsCallbackAndNeverEventsThatFailed() throws Exception {
        List<Object> seen = new CopyOnWriteArrayList<>();
        eventStore.subscribe(events -> events.forEach(event -> seen.add(event.getPayload())));
        started(PublishMode.PARALLEL);
        send(new Open("a"));
        send(new Deposit("a", 7));
        assertThat(seen).hasSize(2);

        FutureCallback<Object, Object> failing = new FutureCallback<>();
        bus.dispatch(asCommandMessage(new DepositThenFail("a", 5)), failing);
        assertThat(failing.get(10, TimeUnit.SECONDS).isExceptional()).isTrue();
        assertThat(send(new GetBalance("a"))).isEqualTo(7L);
        assertThat(seen).hasSize(2);
    }

    @Test
    void shutdownCompletesEveryCommandInFlightExactlyOnce() throws Exception {
        started(PublishMode.IN_TRANSACTION);
        send(new Open("a"));
        List<CountingCallback> callbacks = new ArrayList<>();
        for (int i = 0; i < 3_000; i++) {
            CountingCallback callback = new CountingCallback();
            bus.dispatch(asCommandMessage(new Deposit("a", 1)), callback);
            callbacks.add(callback);
        }

        bus.shutdown();

        assertThat(callbacks).allMatch(callback -> callback.calls.size() == 1);
        long succeeded = callbacks.stream().filter(callback -> !callback.calls.get(0).isExceptional()).count();
        assertThat(storedDeposits("a")).hasSize((int) succeeded);
    }

    private Object send(Object command) throws Exception {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(asCommandMessage(command), callback);
        CommandResultMessage<?> result = callback.get(10, TimeUnit.SECONDS);
        if (result.isExceptional()) {
            throw new AssertionError("command failed: " + command, result.exceptionResult());
        }
        return result.getPayload();
    }

    private List<Long> storedDeposits(String id) {
        return engine.readEvents(id).asStream().map(EventMessage::getPayload)
                     .filter(payload -> payload instanceof Deposited)
                     .map(payload -> ((Deposited) payload).amount())
                     .collect(Collectors.toList());
    }

    /** Records every call, to check each callback is called once. */
    private static final class CountingCallback implements CommandCallback<Object, Object> {

        private final List<CommandResultMessage<?>> calls = new CopyOnWriteArrayList<>();

        @Override
        public void onResult(CommandMessage<?> command, CommandResultMessage<?> result) {
            calls.add(result);
        }
    }
}
