package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.EventMessageHandler;
import org.axonframework.eventhandling.GlobalSequenceTrackingToken;
import org.axonframework.eventhandling.SimpleEventHandlerInvoker;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventhandling.TrackingEventProcessor;
import org.axonframework.eventhandling.TrackingEventProcessorConfiguration;
import org.axonframework.eventhandling.tokenstore.inmemory.InMemoryTokenStore;
import org.axonframework.messaging.StreamableMessageSource;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Axon's {@link InMemoryEventStorageEngine} (the README's quick start) stores a multi-event append from a
 * {@code HashMap} into its skip list, so a reader can meet a batch's higher index before a lower one and skip the lower
 * one for good. The store stage appends many commands' events at once; a real {@link TrackingEventProcessor} must
 * nevertheless count every event, on both ways the store stage appends.
 */
class TrackingProcessorOnInMemoryEngineTest {

    private static final int DISPATCHERS = 4;
    private static final int COMMANDS_PER_DISPATCHER = 30_000;
    private static final int AGGREGATES = 2_000;

    @Test
    void trackingProcessorSeesEveryEventAppendedThroughARingEventStore() throws Exception {
        assertTrackingProcessorSeesEveryEvent(
                engine -> RingEventStore.builder().storageEngine(engine).fetchDelay(5).build());
    }

    @Test
    void trackingProcessorSeesEveryEventAppendedThroughAPlainEmbeddedEventStore() throws Exception {
        assertTrackingProcessorSeesEveryEvent(
                engine -> EmbeddedEventStore.builder().storageEngine(engine).fetchDelay(5).build());
    }

    private static void assertTrackingProcessorSeesEveryEvent(
            Function<InMemoryEventStorageEngine, EmbeddedEventStore> storeOn) throws Exception {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        EmbeddedEventStore eventStore = storeOn.apply(engine);
        RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).handlerThreads(2).ringSize(1024).build();
        bus.registerAggregate(Account.class);

        BitSet seen = new BitSet();
        AtomicLong handled = new AtomicLong();
        AtomicLong lastIndex = new AtomicLong(-1);
        EventMessageHandler counter = event -> {
            long index = ((GlobalSequenceTrackingToken) ((TrackedEventMessage<?>) event).trackingToken())
                    .getGlobalIndex();
            synchronized (seen) {
                seen.set((int) index);
            }
            lastIndex.accumulateAndGet(index, Math::max);
            handled.incrementAndGet();
            return null;
        };
        TrackingEventProcessor processor = TrackingEventProcessor.builder()
                .name("counter")
                .eventHandlerInvoker(SimpleEventHandlerInvoker.builder().eventHandlers(counter).build())
                .messageSource(eventStore)
                .tokenStore(new InMemoryTokenStore())
                .transactionManager(NoTransactionManager.INSTANCE)
                .trackingEventProcessorConfiguration(TrackingEventProcessorConfiguration
                        .forSingleThreadedProcessing()
                        .andBatchSize(50)
                        .andEventAvailabilityTimeout(5, TimeUnit.MILLISECONDS)
                        .andInitialTrackingToken(StreamableMessageSource::createTailToken))
                .build();
        bus.start();
        try {
            CountDownLatch opened = new CountDownLatch(AGGREGATES);
            for (int a = 0; a < AGGREGATES; a++) {
                bus.dispatch(asCommandMessage(new Open(account(a))), (c, r) -> opened.countDown());
            }
            assertThat(opened.await(30, TimeUnit.SECONDS)).as("every account opened").isTrue();
            // Started from the tail (the first event), not Axon's default (a replay from the head, which would hand
            // the events that exist when the processor claims its token over as replays).
            processor.start();
            int total = DISPATCHERS * COMMANDS_PER_DISPATCHER;
            CountDownLatch done = new CountDownLatch(total);
            AtomicInteger failures = new AtomicInteger();
            List<Thread> dispatchers = new ArrayList<>();
            for (int d = 0; d < DISPATCHERS; d++) {
                int dispatcher = d;
                Thread thread = new Thread(() -> {
                    for (int i = 0; i < COMMANDS_PER_DISPATCHER; i++) {
                        CommandMessage<Deposit> deposit = asCommandMessage(
                                new Deposit(account((dispatcher * 7919 + i) % AGGREGATES), 1));
                        bus.dispatch(deposit, (CommandMessage<? extends Deposit> c, CommandResultMessage<?> r) -> {
                            if (r.isExceptional()) {
                                failures.incrementAndGet();
                            }
                            done.countDown();
                        });
                    }
                }, "dispatcher-" + d);
                dispatchers.add(thread);
                thread.start();
            }
            assertThat(done.await(60, TimeUnit.SECONDS)).as("every command completed").isTrue();
            for (Thread dispatcher : dispatchers) {
                dispatcher.join();
            }
            assertThat(failures.get()).as("failed commands").isZero();

            long stored;
            long headIndex;
            try (Stream<? extends TrackedEventMessage<?>> all = engine.readEvents(null, false)) {
                stored = all.count();
            }
            headIndex = ((GlobalSequenceTrackingToken) engine.createHeadToken()).getGlobalIndex();
            assertThat(stored).isEqualTo(AGGREGATES + total);

            // The processor has caught up once it handled the head event; an event it skipped stays skipped.
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            while (lastIndex.get() < headIndex && System.nanoTime() - deadline < 0) {
                Thread.sleep(10);
            }
            Thread.sleep(100);
            List<Integer> missed = new ArrayList<>();
            synchronized (seen) {
                for (int i = seen.nextClearBit(0); i <= headIndex && missed.size() < 20; i = seen.nextClearBit(i + 1)) {
                    missed.add(i);
                }
            }
            assertThat(missed).as("global indexes the tracking processor never handled").isEmpty();
            assertThat(handled.get()).as("events handled by the tracking processor").isEqualTo(stored);
        } finally {
            processor.shutDown();
            bus.shutdown();
            eventStore.shutDown();
        }
    }

    private static String account(int index) {
        return "account-" + index;
    }
}
