package io.github.ringbus.behaviour;

import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingFullException;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.NoHandlerForCommandException;
import org.axonframework.lifecycle.ShutdownInProgressException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static io.github.ringbus.fixtures.RingbusFixture.BLOCK;
import static io.github.ringbus.fixtures.RingbusFixture.blockCommand;
import static io.github.ringbus.fixtures.RingbusFixture.blockingHandler;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * {@link RingCommandBus#dispatchAll}: many commands claimed and handed to the ring a chunk at a time. Each is then a
 * command like any other: handled once, in the list's order for its aggregate, its callback called once; when the
 * ring has no room, the full-ring policy applies to a chunk as a whole.
 */
class DispatchAllTest {

    private RingbusFixture ring;
    private final CountDownLatch release = new CountDownLatch(1);

    @AfterEach
    void shutDown() {
        release.countDown();
        if (ring != null) {
            ring.close();
        }
    }

    /** Counts the callback's calls per command identifier, and the failures. */
    static final class Calls implements CommandCallback<Object, Object> {
        final Map<String, AtomicInteger> perCommand = new ConcurrentHashMap<>();
        final List<Throwable> failures = java.util.Collections.synchronizedList(new ArrayList<>());
        final AtomicInteger total = new AtomicInteger();

        @Override
        public void onResult(CommandMessage<?> command, CommandResultMessage<?> result) {
            perCommand.computeIfAbsent(command.getIdentifier(), id -> new AtomicInteger()).incrementAndGet();
            if (result.isExceptional()) {
                failures.add(result.exceptionResult());
            }
            total.incrementAndGet();
        }

        void awaitTotal(int expected) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (total.get() < expected && System.nanoTime() < deadline) {
                Thread.sleep(2);
            }
        }
    }

    private static List<CommandMessage<?>> deposits(int count, int accounts, int dispatcher) {
        List<CommandMessage<?>> commands = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            commands.add(asCommandMessage(new Deposit("account-" + (i % accounts), dispatcher * 1_000_000L + i)));
        }
        return commands;
    }

    @Test
    void everyCommandOfSeveralBulksIsHandledOnceInItsListsOrderAndCalledBackOnce() throws Exception {
        ring = RingbusFixture.started(b -> b.ringSize(1024));
        for (int a = 0; a < 5; a++) {
            ring.sendAndWait(new Open("account-" + a));
        }
        int perDispatcher = 4_000;
        Calls calls = new Calls();
        List<Thread> dispatchers = new ArrayList<>();
        for (int d = 0; d < 3; d++) {
            List<CommandMessage<?>> bulk = deposits(perDispatcher, 5, d);
            Thread dispatcher = new Thread(() -> ((RingCommandBus) ring.bus).dispatchAll(bulk, calls));
            dispatcher.start();
            dispatchers.add(dispatcher);
        }
        for (Thread dispatcher : dispatchers) {
            dispatcher.join();
        }
        calls.awaitTotal(3 * perDispatcher);

        assertThat(calls.failures).isEmpty();
        assertThat(calls.perCommand).hasSize(3 * perDispatcher).allSatisfy((id, n) -> assertThat(n.get()).isOne());
        for (int a = 0; a < 5; a++) {
            List<Long> amounts = ring.storedPayloads("account-" + a).stream()
                                     .filter(Deposited.class::isInstance).map(p -> ((Deposited) p).amount()).toList();
            assertThat(amounts).hasSize(3 * perDispatcher / 5);
            for (int d = 0; d < 3; d++) {
                long from = d * 1_000_000L;
                assertThat(amounts.stream().filter(v -> v >= from && v < from + 1_000_000L).toList())
                        .as("dispatcher %d's deposits to account-%d, in its list's order", d, a).isSorted();
            }
        }
    }

    @Test
    void aBulkLargerThanTheRingWaitsForRoomChunkByChunkUnderBlock() throws Exception {
        ring = RingbusFixture.started(b -> b.ringSize(16).fullRingPolicy(FullRingPolicy.BLOCK));
        ring.sendAndWait(new Open("account-0"));
        Calls calls = new Calls();

        ((RingCommandBus) ring.bus).dispatchAll(deposits(1_000, 1, 0), calls);
        calls.awaitTotal(1_000);

        assertThat(calls.failures).isEmpty();
        assertThat(calls.total.get()).isEqualTo(1_000);
        assertThat(ring.balanceOf("account-0")).isEqualTo(1_000L * 999 / 2);
    }

    @Test
    void underFailFastABulkChunkThatFindsTooFewFreeSlotsFailsWholeAndNothingOfItIsHandled() {
        ring = RingbusFixture.started(b -> b.ringSize(16).handlerThreads(1).fullRingPolicy(FullRingPolicy.FAIL_FAST));
        List<Outcome> blocked = fillAllButTwoSlots();
        assertThat(ring.bus.remainingCapacity()).isEqualTo(2);
        Calls calls = new Calls();

        ((RingCommandBus) ring.bus).dispatchAll(List.of(asCommandMessage(new Open("a")),
                                                        asCommandMessage(new Open("b")),
                                                        asCommandMessage(new Open("c"))), calls);

        assertThat(calls.total.get()).as("all three called back at once, on this thread").isEqualTo(3);
        assertThat(calls.failures).hasSize(3).allSatisfy(failure -> assertThat(failure)
                .isInstanceOf(RingFullException.class).hasMessageContaining("FAIL_FAST")
                .hasMessageContaining("3 free slots at once"));
        assertThat(ring.bus.remainingCapacity()).as("no slot taken by the refused bulk").isEqualTo(2);
        release.countDown();
        blocked.forEach(Outcome::awaitSuccess);
        assertThat(ring.storedPayloads("a")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void underBlockWithTimeoutTheCommandsOfABulkThatFindNoRoomInTimeFailOnceTheTimeoutHasPassed()
            throws InterruptedException {
        ring = RingbusFixture.started(b -> b.ringSize(16).handlerThreads(1)
                                           .fullRingPolicy(FullRingPolicy.BLOCK_WITH_TIMEOUT)
                                           .fullRingTimeout(java.time.Duration.ofMillis(200)));
        List<Outcome> blocked = fillAllButTwoSlots();
        Calls calls = new Calls();
        long started = System.nanoTime();

        ((RingCommandBus) ring.bus).dispatchAll(List.of(asCommandMessage(new Open("a")),
                                                        asCommandMessage(new Open("b")),
                                                        asCommandMessage(new Open("c"))), calls);

        assertThat(System.nanoTime() - started).as("waited for the timeout")
                                               .isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(200));
        assertThat(calls.failures).as("the command that found no slot").hasSize(1).allSatisfy(
                failure -> assertThat(failure).isInstanceOf(RingFullException.class).hasMessageContaining("200 ms"));
        release.countDown();
        blocked.forEach(Outcome::awaitSuccess);
        calls.awaitTotal(3); // the two that fitted complete after the blocked commands ahead of them
        assertThat(calls.failures).hasSize(1);
        assertThat(ring.storedPayloads("a")).as("the first two, which fitted, in their order").hasSize(1);
        assertThat(ring.storedPayloads("b")).hasSize(1);
        assertThat(ring.storedPayloads("c")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }

    @Test
    void underBlockABulkChunkTheRingHasNoRoomForGoesInFewerAtATimeInsteadOfWaitingForAllAtOnce() throws Exception {
        ring = RingbusFixture.started(b -> b.ringSize(16).handlerThreads(1).fullRingPolicy(FullRingPolicy.BLOCK));
        List<Outcome> blocked = fillAllButTwoSlots();
        Calls calls = new Calls();

        Thread dispatcher = new Thread(() -> ((RingCommandBus) ring.bus).dispatchAll(
                List.of(asCommandMessage(new Open("a")), asCommandMessage(new Open("b")),
                        asCommandMessage(new Open("c"))), calls));
        dispatcher.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (ring.bus.remainingCapacity() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }

        assertThat(ring.bus.remainingCapacity()).as("the two free slots taken while the third command waits")
                                                .isZero();
        release.countDown();
        dispatcher.join(10_000);
        blocked.forEach(Outcome::awaitSuccess);
        calls.awaitTotal(3);
        assertThat(calls.failures).isEmpty();
        assertThat(ring.storedPayloads("c")).hasSize(1);
    }

    /**
     * A shutdown during a long {@code dispatchAll} does not wait for the rest of the list to pass through the ring:
     * from the moment it begins, the commands of the list not yet in the ring are refused, each with a
     * {@link ShutdownInProgressException}, and only those already in the ring (at most the ring and one claim) are
     * handled. Every command is called back once.
     */
    @Test
    void aShutdownDuringALongBulkRefusesTheRestOfTheListInsteadOfWaitingForIt() throws Exception {
        ring = RingbusFixture.started(b -> b.ringSize(16).handlerThreads(1).fullRingPolicy(FullRingPolicy.BLOCK)
                                            .shutdownTimeout(java.time.Duration.ofSeconds(60)));
        java.util.concurrent.atomic.AtomicBoolean shuttingDown = new java.util.concurrent.atomic.AtomicBoolean();
        AtomicInteger handledAfterShutdownBegan = new AtomicInteger();
        AtomicInteger handled = new AtomicInteger();
        ring.bus.subscribe("slow", command -> {
            if (shuttingDown.get()) {
                handledAfterShutdownBegan.incrementAndGet();
            }
            handled.incrementAndGet();
            Thread.sleep(1);
            return null;
        });
        int size = 20_000;
        List<CommandMessage<?>> bulk = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            bulk.add(RingbusFixture.namedCommand("slow", i));
        }
        Calls calls = new Calls();
        Thread dispatcher = new Thread(() -> ((RingCommandBus) ring.bus).dispatchAll(bulk, calls));
        dispatcher.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (handled.get() < 100 && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }

        shuttingDown.set(true);
        ring.bus.shutdown();
        dispatcher.join(20_000);
        calls.awaitTotal(size);

        assertThat(dispatcher.isAlive()).isFalse();
        assertThat(calls.perCommand).hasSize(size).allSatisfy((id, n) -> assertThat(n.get()).isOne());
        assertThat(handledAfterShutdownBegan.get()).as("handled after shutdown began: the ring's 16 and one claim")
                                                    .isLessThanOrEqualTo(16 + 4);
        assertThat(calls.failures).hasSize(size - handled.get())
                                  .allSatisfy(f -> assertThat(f).isInstanceOf(ShutdownInProgressException.class)
                                                                .hasMessageContaining("dispatchAll"));
    }

    /** Sends commands that block in their handler until the ring has only two free slots left. */
    private List<Outcome> fillAllButTwoSlots() {
        ring.bus.subscribe(BLOCK, blockingHandler(release));
        List<Outcome> blocked = new ArrayList<>();
        while (ring.bus.remainingCapacity() > 2) {
            blocked.add(ring.send(blockCommand("blocked-" + blocked.size())));
        }
        return blocked;
    }

    @Test
    void aBulkDispatchedFromAHandlerIntoAFullRingFailsAtOnceInsteadOfWaitingForTheRingItHoldsUp() {
        ring = RingbusFixture.started(b -> b.ringSize(8).handlerThreads(1).fullRingPolicy(FullRingPolicy.BLOCK));
        CountDownLatch ringFull = new CountDownLatch(1);
        Calls calls = new Calls();
        ring.bus.subscribe("fan-out", command -> {
            ringFull.await(5, TimeUnit.SECONDS);
            ((RingCommandBus) ring.bus).dispatchAll(List.of(asCommandMessage(new Open("x")),
                                                            asCommandMessage(new Open("y")),
                                                            asCommandMessage(new Open("z"))), calls);
            return null;
        });
        Outcome fanOut = ring.send(RingbusFixture.namedCommand("fan-out", "go"));
        List<Outcome> behind = new ArrayList<>();
        while (ring.bus.remainingCapacity() > 0) {
            behind.add(ring.send(new Open("behind-" + behind.size())));
        }

        ringFull.countDown();

        org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(10), () -> {
            fanOut.awaitSuccess();
            behind.forEach(Outcome::awaitSuccess);
        }, "the handler waited for a slot only it could free");
        assertThat(calls.total.get()).isEqualTo(3);
        assertThat(calls.failures).hasSize(3).allSatisfy(failure -> assertThat(failure)
                .isInstanceOf(RingFullException.class).hasMessageContaining("pipeline thread"));
    }

    @Test
    void aCommandOfABulkThatNobodyHandlesFailsAloneOnTheDispatchingThread() throws Exception {
        ring = RingbusFixture.started();
        Calls calls = new Calls();

        ((RingCommandBus) ring.bus).dispatchAll(List.of(asCommandMessage(new Open("a")),
                                                        asCommandMessage("nobody handles a String"),
                                                        asCommandMessage(new Open("b"))), calls);
        calls.awaitTotal(3);

        assertThat(calls.failures).hasSize(1).first().isInstanceOf(NoHandlerForCommandException.class);
        assertThat(ring.storedPayloads("a")).hasSize(1);
        assertThat(ring.storedPayloads("b")).hasSize(1);
    }

    @Test
    void aNullCommandInABulkIsRefusedNamingItsPlaceAndNothingIsDispatched() {
        ring = RingbusFixture.started();
        Calls calls = new Calls();
        List<CommandMessage<?>> withNull = new ArrayList<>();
        withNull.add(asCommandMessage(new Open("a")));
        withNull.add(null);

        assertThatThrownBy(() -> ((RingCommandBus) ring.bus).dispatchAll(withNull, calls))
                .isInstanceOf(NullPointerException.class).hasMessageContaining("command 1 of 2 is null");
        assertThat(calls.total.get()).isZero();
        assertThat(ring.storedPayloads("a")).isEmpty();
    }

    @Test
    void aDispatchInterceptorThatThrowsOnACommandOfABulkLeavesTheWholeBulkUndispatched() {
        ring = RingbusFixture.started();
        ring.bus.registerDispatchInterceptor(messages -> (index, command) -> {
            if (command.getPayload() instanceof Open open && open.accountId().equals("bad")) {
                throw new IllegalArgumentException("refused by the interceptor");
            }
            return command;
        });
        Calls calls = new Calls();

        assertThatThrownBy(() -> ((RingCommandBus) ring.bus).dispatchAll(
                List.of(asCommandMessage(new Open("a")), asCommandMessage(new Open("bad"))), calls))
                .hasMessage("refused by the interceptor");
        assertThat(calls.total.get()).isZero();
        assertThat(ring.storedPayloads("a")).isEmpty();
        ring.assertStillHandlesValidCommands();
    }
}
