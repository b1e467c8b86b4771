package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Reject;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.TrackedEventMessage;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * One million commands from four dispatcher threads over a thousand aggregates, two handler threads, one percent of
 * the commands failing in their handler on purpose; the invariants a command bus must keep under load.
 */
class PipelineStressTest {

    private static final int DISPATCHERS = 4;
    private static final int COMMANDS_PER_DISPATCHER = 250_000;
    private static final int AGGREGATES = 1_000;
    /** Failing commands per 10,000: 100 = 1 %. */
    private static final int FAILURES_PER_10K = 100;
    /**
     * Of the failing commands, this many per 100 fail after applying an event, the expensive case: the aggregate is
     * rebuilt from the store, and Axon's in-memory engine reads an aggregate by scanning every stored event. The
     * rest fail before applying anything, which costs nothing to undo.
     */
    private static final int FAILING_AFTER_APPLY_PER_100 = 10;
    /** Amounts of failing commands are at least this, so a stored one would stand out. */
    private static final long FAILING_AMOUNT = 1L << 50;

    @Test
    void millionCommandsKeepEveryInvariant() throws Exception {
        RingbusFixture ring = RingbusFixture.started(b -> b.handlerThreads(2).ringSize(1024));
        try {
            for (int a = 0; a < AGGREGATES; a++) {
                ring.sendForResult(new Open(account(a)));
            }
            ring.sendAndWait(new Deposit(account(0), 0)); // the opens are handled before this one returns

            int total = DISPATCHERS * COMMANDS_PER_DISPATCHER;
            AtomicIntegerArray callbacks = new AtomicIntegerArray(total);
            AtomicIntegerArray failed = new AtomicIntegerArray(total);
            AtomicLongArray expectedBalance = new AtomicLongArray(AGGREGATES);
            CountDownLatch done = new CountDownLatch(total);
            List<Thread> dispatchers = new ArrayList<>();
            for (int d = 0; d < DISPATCHERS; d++) {
                int dispatcher = d;
                dispatchers.add(new Thread(() -> dispatch(ring, dispatcher, callbacks, failed, expectedBalance,
                                                          done), "dispatcher-" + d));
            }
            long start = System.nanoTime();
            dispatchers.forEach(Thread::start);
            assertThat(done.await(5, TimeUnit.MINUTES)).as("all callbacks within 5 minutes").isTrue();
            long elapsed = System.nanoTime() - start;
            for (Thread dispatcher : dispatchers) {
                dispatcher.join();
            }
            System.out.printf("ringbus stress: %,d commands in %d ms (%,.0f commands/s)%n",
                              total, elapsed / 1_000_000, total / (elapsed / 1e9));

            // Every callback exactly once, and the expected ones failed.
            int failures = 0;
            for (int i = 0; i < total; i++) {
                assertThat(callbacks.get(i)).as("callbacks of command %d", i).isEqualTo(1);
                failures += failed.get(i);
            }
            assertThat(failures).isEqualTo(expectedFailures());

            Map<String, List<DomainEventMessage<?>>> stored = allStoredEventsByAggregate(ring);
            assertThat(stored).hasSize(AGGREGATES);
            for (int a = 0; a < AGGREGATES; a++) {
                List<DomainEventMessage<?>> events = stored.get(account(a));
                // Gapless sequence numbers from 0.
                for (int i = 0; i < events.size(); i++) {
                    assertThat(events.get(i).getSequenceNumber()).as("event %d of %s", i, account(a)).isEqualTo(i);
                }
                long balance = 0;
                long[] lastAmountOfDispatcher = new long[DISPATCHERS];
                for (DomainEventMessage<?> event : events.subList(1, events.size())) {
                    long amount = ((Deposited) event.getPayload()).amount();
                    // No event of a failed command.
                    assertThat(amount).as("a stored deposit of %s", account(a)).isLessThan(FAILING_AMOUNT);
                    balance += amount;
                    // Per aggregate, each dispatcher's commands are stored in the order it dispatched them.
                    if (amount > 0) {
                        int dispatcher = (int) (amount / COMMANDS_PER_DISPATCHER / 10);
                        assertThat(amount).isGreaterThan(lastAmountOfDispatcher[dispatcher]);
                        lastAmountOfDispatcher[dispatcher] = amount;
                    }
                }
                // Final state is the sum of the successful commands, in the store and in memory.
                assertThat(balance).as("stored balance of %s", account(a)).isEqualTo(expectedBalance.get(a));
                assertThat(ring.balanceOf(account(a))).isEqualTo(expectedBalance.get(a));
            }
        } finally {
            ring.close();
        }
    }

    private static void dispatch(RingbusFixture ring, int dispatcher, AtomicIntegerArray callbacks,
                                 AtomicIntegerArray failed, AtomicLongArray expectedBalance, CountDownLatch done) {
        SplittableRandom random = new SplittableRandom(dispatcher);
        for (int n = 0; n < COMMANDS_PER_DISPATCHER; n++) {
            int index = dispatcher * COMMANDS_PER_DISPATCHER + n;
            int aggregate = random.nextInt(AGGREGATES);
            // Unique per dispatcher and increasing in dispatch order: dispatcher * 10 * N + n + 1.
            long amount = (long) dispatcher * COMMANDS_PER_DISPATCHER * 10 + n + 1;
            boolean failing = isFailing(index);
            Object command = !failing ? new Deposit(account(aggregate), amount)
                    : isFailingAfterApply(index) ? new DepositThenFail(account(aggregate), FAILING_AMOUNT + amount)
                    : new Reject(account(aggregate));
            CommandCallback<Object, Object> callback = (message, result) -> {
                callbacks.incrementAndGet(index);
                if (result.isExceptional()) {
                    failed.incrementAndGet(index);
                } else {
                    expectedBalance.addAndGet(aggregate, amount);
                }
                done.countDown();
            };
            ring.bus.dispatch(asCommandMessage(command), callback);
        }
    }

    private static boolean isFailing(int index) {
        return index % 10_000 < FAILURES_PER_10K;
    }

    private static boolean isFailingAfterApply(int index) {
        return index % 100 < FAILING_AFTER_APPLY_PER_100;
    }

    private static int expectedFailures() {
        int count = 0;
        for (int i = 0; i < DISPATCHERS * COMMANDS_PER_DISPATCHER; i++) {
            count += isFailing(i) ? 1 : 0;
        }
        return count;
    }

    private static Map<String, List<DomainEventMessage<?>>> allStoredEventsByAggregate(RingbusFixture ring) {
        Map<String, List<DomainEventMessage<?>>> byAggregate = new HashMap<>();
        try (var stream = ring.engine.readEvents(null, false)) {
            stream.map(TrackedEventMessage.class::cast)
                  .map(e -> (DomainEventMessage<?>) e)
                  .forEach(e -> byAggregate.computeIfAbsent(e.getAggregateIdentifier(), k -> new ArrayList<>())
                                           .add(e));
        }
        byAggregate.values().forEach(events -> events.sort(
                (x, y) -> Long.compare(x.getSequenceNumber(), y.getSequenceNumber())));
        return byAggregate.entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue));
    }

    private static String account(int index) {
        return "account-" + index;
    }
}
