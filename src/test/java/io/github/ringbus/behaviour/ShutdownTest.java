package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.CommitOutcomeUnknownException;
import io.github.ringbus.Topology;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Shutting down refuses new commands and drains the ones in flight: every callback is called exactly once, with the
 * command's result if it was accepted and with a {@link ShutdownInProgressException} if it was refused, and what is
 * stored is exactly what the successful callbacks reported. Calling it again does nothing; calling it from the bus's
 * own thread is refused.
 */
class ShutdownTest {

    private static final int DISPATCHERS = 2;
    private static final int PER_DISPATCHER = 10_000;
    /** Each dispatcher sends this many before the test shuts down... */
    private static final int BEFORE_SHUTDOWN = 1_000;
    /** ...and holds back this many until the bus no longer runs, so both outcomes certainly occur. */
    private static final int AFTER_SHUTDOWN_STARTED = 1_000;

    private RingbusFixture ring;
    private Configuration configuration;
    private final ExecutorService dispatchers = Executors.newFixedThreadPool(DISPATCHERS);

    @AfterEach
    void shutDown() {
        dispatchers.shutdownNow();
        if (ring != null) {
            ring.close();
        }
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    @Test
    void shutdownWhileOtherThreadsDispatchCompletesEveryAcceptedCommandAndRefusesTheRestExactlyOnce()
            throws Exception {
        ring = RingbusFixture.started();
        RingCommandBus bus = ring.bus;

        Results results = dispatchWhileShuttingDown(bus, bus::isRunning, bus::shutdown);

        results.assertEveryCallbackCalledOnceAndEveryOutcomeExpected();
        results.assertStoredEventsMatchTheSuccessfulCallbacks(ring::storedEvents);
    }

    @Test
    void axonConfigurationShutdownDrainsTheRingTheSameWay() throws Exception {
        FaultyStorageEngine engine = new FaultyStorageEngine();
        configuration = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .start();
        CommandBus bus = configuration.commandBus();
        RingCommandBus ringBus = RingCommandBus.localRingOf(bus);
        assertThat(ringBus).isNotNull();
        Configuration config = configuration;

        Results results = dispatchWhileShuttingDown(bus, ringBus::isRunning, config::shutdown);
        configuration = null;

        assertThat(ringBus.isRunning()).isFalse();
        results.assertEveryCallbackCalledOnceAndEveryOutcomeExpected();
        results.assertStoredEventsMatchTheSuccessfulCallbacks(
                id -> engine.readEvents(id).asStream().collect(Collectors.toList()));
    }

    @Test
    void shutdownTwiceIsHarmless() {
        ring = RingbusFixture.started();
        ring.sendAndWait(new Open("a"));

        ring.bus.shutdown();
        ring.bus.shutdown();

        assertThat(ring.bus.isRunning()).isFalse();
        assertThat(ring.send(new Deposit("a", 1)).awaitFailure()).isInstanceOf(ShutdownInProgressException.class);
    }

    @Test
    void busCannotBeRestartedAfterShutdown() {
        ring = RingbusFixture.started();
        ring.bus.shutdown();

        assertThatThrownBy(ring.bus::start).isInstanceOf(IllegalStateException.class)
                                           .hasMessageContaining("cannot be restarted");
        assertThat(ring.bus.isRunning()).isFalse();
    }

    @Test
    void shutdownBeforeStartIsHarmlessAndLeavesTheBusRefusingCommands() {
        ring = RingbusFixture.notStarted();

        ring.bus.shutdown();

        assertThat(ring.send(new Open("a")).awaitFailure()).isInstanceOf(ShutdownInProgressException.class);
    }

    /**
     * A callback runs on the complete stage's thread, which the ring's drain waits for: shutdown from there cannot
     * wait. It returns at once, refuses every command from then on, and the ring drains on a thread of its own once
     * the callback has returned: every command it had accepted completes normally, and its threads end.
     */
    @Test
    void shutdownFromInsideACallbackRefusesNewCommandsAndDrainsTheRingOnceTheCallbackReturns() {
        ring = RingbusFixture.started(b -> b.threadNamePrefix("callback-shutdown"));
        AtomicReference<Throwable> thrown = new AtomicReference<>();
        CompletableFuture<CommandResultMessage<?>> opened = new CompletableFuture<>();
        CountDownLatch shutdownCalled = new CountDownLatch(1);
        List<Outcome> deposits = new ArrayList<>();
        ring.bus.dispatch(asCommandMessage(new Open("a")), (command, result) -> {
            try {
                ring.bus.shutdown();
            } catch (Throwable t) {
                thrown.set(t);
            }
            shutdownCalled.countDown();
            opened.complete(result);
        });
        for (int i = 0; i < 200; i++) {
            deposits.add(ring.send(new Deposit("a", 1)));
        }

        assertThat(opened.orTimeout(10, TimeUnit.SECONDS).join().isExceptional()).isFalse();
        assertThat(thrown.get()).as("shutdown from the callback").isNull();
        assertThat(ring.send(new Deposit("a", 1)).awaitFailure()).as("a command after the shutdown began")
                                                                  .isInstanceOf(ShutdownInProgressException.class);
        awaitThreadsEnded("callback-shutdown-");
        assertThat(ring.bus.isRunning()).isFalse();
        long succeeded = 0;
        for (Outcome deposit : deposits) {
            CommandResultMessage<?> result = deposit.await();
            assertThat(deposit.calls()).isEqualTo(1);
            if (result.isExceptional()) {
                assertThat(result.exceptionResult()).isInstanceOf(ShutdownInProgressException.class);
            } else {
                succeeded++;
            }
        }
        assertThat(ring.storedEvents("a")).hasSize(1 + (int) succeeded);
    }

    /**
     * Axon's {@code Configuration.shutdown()} from inside a command handler, as on SimpleCommandBus: the application
     * shuts down. The bus's part waits until the handler has returned; the handler's own command completes and is
     * stored.
     */
    @Test
    void axonConfigurationShutDownFromInsideAHandlerShutsTheRingDownOnceTheHandlerReturns() {
        InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
        AtomicReference<Configuration> configuration = new AtomicReference<>();
        Configuration axon = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                .registerCommandHandler(c -> new StopHandler(configuration))
                .configureCommandBus(c -> RingCommandBus.builder()
                        .eventStore(c.eventStore())
                        .threadNamePrefix("handler-shutdown")
                        .build())
                .start();
        configuration.set(axon);
        RingCommandBus bus = (RingCommandBus) axon.commandBus();

        Object result = axon.commandGateway().sendAndWait(new Stop("app-1"), 10, TimeUnit.SECONDS);

        assertThat(result).isEqualTo("stopping");
        awaitThreadsEnded("handler-shutdown-");
        assertThat(bus.isRunning()).isFalse();
        try (Stream<? extends TrackedEventMessage<?>> stored = engine.readEvents(null, false)) {
            List<Object> payloads = stored.map(EventMessage::getPayload).collect(Collectors.toList());
            assertThat(payloads).containsExactly(new Stopping("app-1"));
        }
    }

    /** Asks the handler to shut the whole Axon application down. */
    record Stop(String applicationId) {
    }

    /** Published by the handler of {@link Stop} before it shuts the application down. */
    record Stopping(String applicationId) {
    }

    /** Publishes {@link Stopping}, then shuts the Axon application down from inside the handler. */
    static final class StopHandler {

        private final AtomicReference<Configuration> configuration;

        StopHandler(AtomicReference<Configuration> configuration) {
            this.configuration = configuration;
        }

        @CommandHandler
        String handle(Stop stop) {
            configuration.get().eventBus()
                         .publish(GenericEventMessage.asEventMessage(new Stopping(stop.applicationId())));
            configuration.get().shutdown();
            return "stopping";
        }
    }

    private static void awaitThreadsEnded(String prefix) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<String> alive;
        do {
            alive = Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
                          .map(Thread::getName).filter(name -> name.startsWith(prefix)).toList();
            if (alive.isEmpty()) {
                return;
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(10));
        } while (System.nanoTime() < deadline);
        throw new AssertionError("ring threads still running 10 s after the shutdown began: " + alive);
    }

    /**
     * When commands are still in flight after the shutdown timeout, shutdown stops the stages and completes each of
     * them with a {@link ShutdownInProgressException}, exactly once. Here the only handler thread is held until the
     * store and complete stages' threads have ended (which happens only on the timeout path), then let go. (Released
     * once the complete stage alone had ended, the handler could return while the store thread was still parked
     * between two looks at its barrier: the store then stored the first command, which rightly got its real outcome,
     * success, and the test failed about once in five runs.)
     */
    @Test
    void commandsStillInFlightAfterTheShutdownTimeoutAreCompletedWithShutdownInProgressException() throws Exception {
        ring = ringThatGivesUpAfter200Ms("timeout-case");
        ring.assertStillHandlesValidCommands(); // every stage thread has started
        CountDownLatch release = new CountDownLatch(1);
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        List<Outcome> inFlight = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            inFlight.add(ring.send(blockCommand("in-flight-" + i)));
        }
        Thread storeStage = stageThread("timeout-case-store");
        Thread completeStage = stageThread("timeout-case-complete");
        Future<?> releaser = dispatchers.submit(() -> {
            storeStage.join(TimeUnit.SECONDS.toMillis(10));
            completeStage.join(TimeUnit.SECONDS.toMillis(10));
            release.countDown();
            return null;
        });

        ring.bus.shutdown();
        releaser.get(10, TimeUnit.SECONDS);

        for (Outcome outcome : inFlight) {
            assertThat(outcome.isDone()).isTrue();
            assertThat(outcome.calls()).isEqualTo(1);
            assertThat(outcome.awaitFailure()).isInstanceOf(ShutdownInProgressException.class)
                                              .hasMessageContaining("[" + BLOCK + "]");
        }
    }

    /**
     * A callback still running when shutdown gives up (after the stage threads' grace) holds the callback thread,
     * not the ring: the commands behind it completed and were stored, and shutdown returns all the same. When the
     * stuck callback returns, the callbacks handed over behind it are called, each once, with their real outcome.
     */
    @Test
    void aCallbackThatOutlastsShutdownIsCalledOnceAndTheStoredCommandsBehindItSucceed() throws Exception {
        ring = ringThatGivesUpAfter200Ms("stuck-callback");
        ring.assertStillHandlesValidCommands(); // every stage thread has started
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicInteger stuckCalls = new AtomicInteger();
        ring.bus.dispatch(asCommandMessage(new Open("stuck")), (command, result) -> {
            if (stuckCalls.incrementAndGet() == 1) {
                entered.countDown();
                awaitQuietly(release);
            }
        });
        assertThat(entered.await(10, TimeUnit.SECONDS)).isTrue();
        List<Outcome> behind = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            behind.add(ring.send(new Open("behind-" + i)));
        }
        awaitCondition(() -> ring.storedPayloads("behind-19").size() == 1);
        Thread completeStage = stageThread("stuck-callback-complete");
        Thread callbackThread = stageThread("stuck-callback-callbacks");

        ring.bus.shutdown();

        assertThat(completeStage.isAlive()).isFalse();
        assertThat(behind).noneMatch(Outcome::isDone);
        release.countDown();
        callbackThread.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(callbackThread.isAlive()).isFalse();
        assertThat(stuckCalls).hasValue(1);
        for (int i = 0; i < behind.size(); i++) {
            assertThat(behind.get(i).awaitSuccess()).isEqualTo("behind-" + i);
            assertThat(behind.get(i).calls()).isEqualTo(1);
        }
    }

    /**
     * An append still running when shutdown gives up may yet store its events: its commands, and the ones behind them
     * that the store thread could still reach, fail with a {@link CommitOutcomeUnknownException}, never with a
     * failure that says nothing was stored; and nothing calls their callbacks again once the append returns.
     */
    @Test
    void commandsAnAppendThatOutlastsShutdownMayStillStoreFailAsOutcomeUnknown() throws Exception {
        ring = ringThatGivesUpAfter200Ms("stuck-append");
        ring.assertStillHandlesValidCommands();
        FaultyStorageEngine.HeldAppend held = ring.engine.holdNextAppend();
        Outcome first = ring.send(new Open("held"));
        held.awaitStarted();
        List<Outcome> behind = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            behind.add(ring.send(new Open("behind-" + i)));
        }
        Thread storeStage = stageThread("stuck-append-store");

        ring.bus.shutdown();
        held.release();
        storeStage.join(TimeUnit.SECONDS.toMillis(10));

        assertThat(storeStage.isAlive()).isFalse();
        assertThat(ring.storedPayloads("held")).as("the held append went on after shutdown").hasSize(1);
        assertThat(first.calls()).isEqualTo(1);
        assertThat(first.awaitFailure()).isInstanceOf(CommitOutcomeUnknownException.class)
                                        .hasMessageContaining("[" + Open.class.getName() + "]")
                                        .hasMessageContaining("stuck-append-store");
        for (Outcome outcome : behind) {
            assertThat(outcome.calls()).isEqualTo(1);
            assertThat(outcome.awaitFailure()).isInstanceOf(CommitOutcomeUnknownException.class);
        }
    }

    /** A started ring, one thread per stage, whose shutdown gives up on the ring after 200 ms. */
    private static RingbusFixture ringThatGivesUpAfter200Ms(String threadNamePrefix) {
        return RingbusFixture.started(b -> b.handlerThreads(1).topology(Topology.FULL)
                                           .threadNamePrefix(threadNamePrefix)
                                           .shutdownTimeout(Duration.ofMillis(200)));
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(15, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Shutdown drains whatever was dispatched, also right after start, when the stage threads may not have begun to
     * run yet. Each round starts a fresh bus, dispatches one command and shuts down at once; the command must complete
     * (successfully: nothing keeps it from being handled) before shutdown returns.
     */
    @Test
    void shutdownRightAfterStartStillCompletesTheCommandInFlight() {
        for (int round = 0; round < 20; round++) {
            try (RingbusFixture fresh = RingbusFixture.started(b -> b.handlerThreads(4))) {
                Outcome open = fresh.send(new Open("a"));

                fresh.bus.shutdown();

                assertThat(open.isDone()).as("round %d: callback called by the time shutdown returned", round)
                                         .isTrue();
                assertThat(open.calls()).isEqualTo(1);
                assertThat(open.awaitSuccess()).isEqualTo("a");
            }
        }
    }

    /**
     * A dispatcher waiting for a slot (full-ring policy {@code BLOCK}) must not keep shutdown from honouring its
     * timeout: the ring below is full and its only handler is stuck, so nothing completes until shutdown gives up on
     * the commands in flight. Expected: shutdown returns after about its timeout, the waiting dispatch is refused,
     * and every callback is called exactly once with a {@link ShutdownInProgressException}. The handler is let go
     * only once the complete stage's thread has ended (which happens only when shutdown gives up).
     */
    @Test
    void shutdownTimeoutAlsoBoundsTheWaitForADispatcherBlockedOnAFullRing() throws Exception {
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1).topology(Topology.FULL)
                                           .threadNamePrefix("stuck-ring")
                                           .shutdownTimeout(Duration.ofMillis(200)));
        ring.assertStillHandlesValidCommands(); // every stage thread has started
        CountDownLatch release = new CountDownLatch(1);
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        List<Outcome> outcomes = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            outcomes.add(ring.send(blockCommand("in-flight-" + i)));
        }
        AtomicReference<Thread> dispatcherThread = new AtomicReference<>();
        Future<Outcome> waitingForASlot = dispatchers.submit(() -> {
            dispatcherThread.set(Thread.currentThread());
            return ring.send(blockCommand("waiting-for-a-slot"));
        });
        awaitCondition(() -> dispatcherThread.get() != null && isClaimingASlot(dispatcherThread.get()));
        Thread storeStage = stageThread("stuck-ring-store");
        Thread completeStage = stageThread("stuck-ring-complete");
        Future<?> releaser = dispatchers.submit(() -> {
            // Released only once both have ended: a store thread still running would store the released command,
            // rightly reported as a success, and this test asks what happens to commands nothing will store.
            storeStage.join(TimeUnit.SECONDS.toMillis(10));
            completeStage.join(TimeUnit.SECONDS.toMillis(10));
            release.countDown();
            return null;
        });

        CompletableFuture<Void> shutdown = CompletableFuture.runAsync(ring.bus::shutdown);
        try {
            assertThat(shutdown).as("shutdown with a 200 ms timeout, while a dispatcher waits for a slot")
                                .succeedsWithin(Duration.ofSeconds(5));
        } finally {
            release.countDown();
        }

        outcomes.add(waitingForASlot.get(10, TimeUnit.SECONDS));
        releaser.get(10, TimeUnit.SECONDS);
        for (Outcome outcome : outcomes) {
            assertThat(outcome.calls()).isEqualTo(1);
            assertThat(outcome.awaitFailure()).isInstanceOf(ShutdownInProgressException.class);
        }
    }

    /** The live thread of that name: a stage thread of a bus built with its own thread name prefix. */
    private static Thread stageThread(String name) {
        return Thread.getAllStackTraces().keySet().stream().filter(t -> t.getName().equals(name)).findFirst()
                     .orElseThrow(() -> new AssertionError("no live thread named " + name));
    }

    private static boolean isClaimingASlot(Thread thread) {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals("io.github.ringbus.Admission")
                    && frame.getMethodName().equals("waitForSlot")) {
                return true;
            }
        }
        return false;
    }

    // --- the concurrent scenario ---------------------------------------------------------------------------------

    /**
     * Each dispatcher sends {@link #PER_DISPATCHER} deposits of 1 to its own account without waiting; once both have
     * sent {@link #BEFORE_SHUTDOWN}, the test thread shuts down while they go on. Each dispatcher holds its last
     * {@link #AFTER_SHUTDOWN_STARTED} until the bus no longer runs.
     */
    private Results dispatchWhileShuttingDown(CommandBus bus, BooleanSupplier running, Runnable shutdown)
            throws Exception {
        Results results = new Results();
        for (int d = 0; d < DISPATCHERS; d++) {
            CompletableFuture<CommandResultMessage<?>> opened = new CompletableFuture<>();
            bus.dispatch(asCommandMessage(new Open(account(d))), (c, r) -> opened.complete(r));
            assertThat(opened.get(10, TimeUnit.SECONDS).isExceptional()).isFalse();
        }
        CountDownLatch startedDispatching = new CountDownLatch(DISPATCHERS);
        List<Future<?>> senders = new ArrayList<>();
        for (int d = 0; d < DISPATCHERS; d++) {
            int dispatcher = d;
            senders.add(dispatchers.submit(() -> {
                for (int n = 0; n < PER_DISPATCHER; n++) {
                    if (n == BEFORE_SHUTDOWN) {
                        startedDispatching.countDown();
                    }
                    if (n == PER_DISPATCHER - AFTER_SHUTDOWN_STARTED) {
                        awaitCondition(() -> !running.getAsBoolean());
                    }
                    int index = dispatcher * PER_DISPATCHER + n;
                    bus.dispatch(asCommandMessage(new Deposit(account(dispatcher), 1)),
                                 (command, result) -> results.record(index, result));
                }
                return null;
            }));
        }
        assertThat(startedDispatching.await(10, TimeUnit.SECONDS)).isTrue();

        shutdown.run();

        for (Future<?> dispatcher : senders) {
            dispatcher.get(30, TimeUnit.SECONDS);
        }
        return results;
    }

    private static String account(int dispatcher) {
        return "account-" + dispatcher;
    }

    private static void awaitCondition(BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("condition not reached within 10 s");
            }
            LockSupport.parkNanos(100_000); // polls the condition; the waiting thread must not starve the ring
        }
    }

    /** Every callback's calls and (first) result, by command index. */
    private static final class Results {

        private final int total = DISPATCHERS * PER_DISPATCHER;
        private final AtomicInteger[] calls = new AtomicInteger[total];
        private final AtomicReferenceArray<CommandResultMessage<?>> firstResult = new AtomicReferenceArray<>(total);

        Results() {
            for (int i = 0; i < total; i++) {
                calls[i] = new AtomicInteger();
            }
        }

        void record(int index, CommandResultMessage<?> result) {
            calls[index].incrementAndGet();
            firstResult.compareAndSet(index, null, result);
        }

        void assertEveryCallbackCalledOnceAndEveryOutcomeExpected() {
            int succeeded = 0;
            int refused = 0;
            for (int i = 0; i < total; i++) {
                assertThat(calls[i].get()).as("callback calls of command %d", i).isEqualTo(1);
                CommandResultMessage<?> result = firstResult.get(i);
                if (!result.isExceptional()) {
                    succeeded++;
                } else {
                    assertThat(result.exceptionResult()).as("failure of command %d", i)
                                                        .isInstanceOf(ShutdownInProgressException.class)
                                                        .hasMessageContaining(Deposit.class.getName());
                    refused++;
                }
            }
            assertThat(succeeded + refused).isEqualTo(total);
            assertThat(succeeded).as("accepted before shutdown").isGreaterThanOrEqualTo(DISPATCHERS * BEFORE_SHUTDOWN);
            assertThat(refused).as("refused after shutdown began")
                               .isGreaterThanOrEqualTo(DISPATCHERS * AFTER_SHUTDOWN_STARTED);
        }

        /**
         * Per account: the stored deposits are exactly as many as the successful callbacks, with gapless sequence
         * numbers, and the balances the successful callbacks reported are exactly 1..n.
         */
        void assertStoredEventsMatchTheSuccessfulCallbacks(
                Function<String, List<? extends DomainEventMessage<?>>> stored) {
            for (int d = 0; d < DISPATCHERS; d++) {
                Set<Object> balances = new HashSet<>();
                int succeeded = 0;
                for (int n = 0; n < PER_DISPATCHER; n++) {
                    CommandResultMessage<?> result = firstResult.get(d * PER_DISPATCHER + n);
                    if (!result.isExceptional()) {
                        succeeded++;
                        balances.add(result.getPayload());
                    }
                }
                List<? extends DomainEventMessage<?>> events = stored.apply(account(d));
                assertThat(events).as("stored events of %s", account(d)).hasSize(succeeded + 1);
                assertThat(events).extracting(DomainEventMessage::getSequenceNumber)
                                  .containsExactlyElementsOf(LongStream.rangeClosed(0, succeeded).boxed()
                                                                       .collect(Collectors.toList()));
                assertThat(balances).containsExactlyInAnyOrderElementsOf(
                        LongStream.rangeClosed(1, succeeded).boxed().collect(Collectors.toList()));
            }
        }
    }
}
