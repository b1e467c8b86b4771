package io.github.ringbus.postgres;

import io.github.ringbus.RingInternals;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.SimpleEventHandlerInvoker;
import org.axonframework.eventhandling.TrackingEventProcessor;
import org.axonframework.eventhandling.TrackingEventProcessorConfiguration;
import org.axonframework.eventhandling.tokenstore.inmemory.InMemoryTokenStore;
import org.axonframework.common.Registration;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Several store threads ({@code storeThreads(4)}) on a real PostgreSQL: each stores, publishes and completes its own
 * share of the aggregates in transactions of its own, and every guarantee of one store thread stays.
 */
class PostgresStoreShardsTest extends OnPostgres {

    private static final int SHARDS = 4;

    @Test
    void everyAggregatesEventsAreStoredInDispatchOrderWithoutGapsAcrossFourStoreThreads() throws Exception {
        Set<String> appendingThreads = ConcurrentHashMap.newKeySet();
        try (PostgresRing ring = new PostgresRing(server, (connection, events) ->
                appendingThreads.add(Thread.currentThread().getName()), b -> b.storeThreads(SHARDS))) {
            assertThat(ring.bus.storeThreads()).isEqualTo(SHARDS);
            int dispatchers = 8;
            int accountsEach = 3;
            int depositsEach = 150;
            Map<String, List<Long>> sent = new ConcurrentHashMap<>();
            for (int d = 0; d < dispatchers; d++) {
                for (int a = 0; a < accountsEach; a++) {
                    ring.sendAndWait(new Open("order-" + d + "-" + a));
                }
            }
            List<CompletableFuture<CommandResultMessage<Object>>> results = sendFromDispatchers(
                    ring, dispatchers, depositsEach * accountsEach, (dispatcher, i) -> {
                        String account = "order-" + dispatcher + "-" + (i % accountsEach);
                        long amount = i + 1;
                        sent.computeIfAbsent(account, k -> new ArrayList<>()).add(amount);
                        return new Deposit(account, amount);
                    });
            assertThat(results).allSatisfy(r -> assertThat(r.join().isExceptional())
                    .as("%s", r.join().optionalExceptionResult()).isFalse());

            for (Map.Entry<String, List<Long>> account : sent.entrySet()) {
                List<DomainEventMessage<?>> events = PostgresRing.readFresh(server, account.getKey());
                assertThat(events).extracting(DomainEventMessage::getSequenceNumber)
                                  .containsExactlyElementsOf(LongStream.range(0, events.size()).boxed().toList());
                assertThat(PostgresRing.storedDeposits(server, account.getKey()))
                        .as("deposits of %s in the order its one dispatcher sent them", account.getKey())
                        .containsExactlyElementsOf(account.getValue());
            }
            assertThat(appendingThreads).as("threads that appended")
                                        .containsExactlyInAnyOrder("ringbus-store-complete-0",
                                                                   "ringbus-store-complete-1",
                                                                   "ringbus-store-complete-2",
                                                                   "ringbus-store-complete-3");
        }
    }

    @Test
    void aSlowCommitInOneStoreThreadHoldsBackNoCallbackOfAnother() throws Exception {
        String slow = accountInShard(0, "slow-");
        CountDownLatch appending = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        try (PostgresRing ring = new PostgresRing(server, (connection, events) -> {
            if (events.stream().anyMatch(e -> e.getPayload().equals(new io.github.ringbus.fixtures.AccountEvents
                    .Deposited(slow, 99)))) {
                appending.countDown();
                awaitQuietly(release);
            }
        }, b -> b.storeThreads(SHARDS))) {
            List<String> others = new ArrayList<>();
            for (int shard = 1; shard < SHARDS; shard++) {
                others.add(accountInShard(shard, "fast-"));
            }
            String sameShard = accountInShard(0, "neighbour-");
            ring.sendAndWait(new Open(slow));
            ring.sendAndWait(new Open(sameShard));
            for (String other : others) {
                ring.sendAndWait(new Open(other));
            }

            CompletableFuture<CommandResultMessage<Object>> held = ring.send(new Deposit(slow, 99));
            assertThat(appending.await(30, TimeUnit.SECONDS)).as("the slow append began").isTrue();
            CompletableFuture<CommandResultMessage<Object>> neighbour = ring.send(new Deposit(sameShard, 1));
            for (String other : others) {
                CommandResultMessage<Object> result = ring.send(new Deposit(other, 1)).get(10, TimeUnit.SECONDS);
                assertThat(result.isExceptional()).as("%s", result.optionalExceptionResult()).isFalse();
            }
            assertThat(held).isNotDone();
            assertThat(neighbour).as("a command stored by the held thread waits for it").isNotDone();

            release.countDown();
            assertThat(held.get(30, TimeUnit.SECONDS).isExceptional()).isFalse();
            assertThat(neighbour.get(30, TimeUnit.SECONDS).isExceptional()).isFalse();
            assertThat(PostgresRing.storedDeposits(server, slow)).containsExactly(99L);
        } finally {
            release.countDown();
        }
    }

    @Test
    void aFailedAppendFailsOnlyItsOwnCommandWhileTheOtherStoreThreadsCommit() throws Exception {
        String bad = accountInShard(2, "bad-");
        try (PostgresRing ring = new PostgresRing(server, (connection, events) -> {
            for (EventMessage<?> event : events) {
                if (event.getPayload().equals(new io.github.ringbus.fixtures.AccountEvents.Deposited(bad, 13))) {
                    throw new SQLException("value refused for deposit 13", "22003");
                }
            }
        }, b -> b.storeThreads(SHARDS))) {
            List<String> accounts = new ArrayList<>(List.of(bad));
            for (int i = 0; i < 12; i++) {
                accounts.add("isolated-" + i);
            }
            for (String account : accounts) {
                ring.sendAndWait(new Open(account));
            }
            Map<String, CompletableFuture<CommandResultMessage<Object>>> results = new ConcurrentHashMap<>();
            for (long amount = 1; amount <= 40; amount++) {
                for (String account : accounts) {
                    results.put(account + "/" + amount, ring.send(new Deposit(account, amount)));
                }
            }
            CompletableFuture.allOf(results.values().toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);

            assertThat(results.get(bad + "/13").join().isExceptional()).isTrue();
            List<String> failed = results.entrySet().stream()
                                         .filter(e -> e.getValue().join().isExceptional())
                                         .map(Map.Entry::getKey).toList();
            // The commands of the bad account handled after deposit 13 built on it and fail with it (see the design's
            // "failure in the store"); no other account loses anything.
            assertThat(failed).allMatch(key -> key.startsWith(bad + "/"));
            for (int i = 0; i < 12; i++) {
                assertThat(PostgresRing.storedDeposits(server, "isolated-" + i))
                        .containsExactlyElementsOf(LongStream.rangeClosed(1, 40).boxed().toList());
            }
            List<Long> badStored = PostgresRing.storedDeposits(server, bad);
            assertThat(badStored).doesNotContain(13L).containsSubsequence(LongStream.rangeClosed(1, 12).boxed()
                                                                                      .toList());
            assertThat(ring.sendAndWait(new Deposit(bad, 1000)).isExceptional()).isFalse();
            assertThat(PostgresRing.storedDeposits(server, bad)).endsWith(1000L);
        }
    }

    @Test
    void aTrackingProcessorHandlesEveryStoredEventExactlyOnceWhileFourStoreThreadsCommitSideBySide()
            throws Exception {
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        try (PostgresRing ring = new PostgresRing(server, null, b -> b.storeThreads(SHARDS))) {
            TrackingEventProcessor processor = trackingProcessor("tracking-under-shards", ring, 50, event ->
                    seen.computeIfAbsent(event.getIdentifier(), id -> new AtomicInteger()).incrementAndGet());
            processor.start();
            try {
                int dispatchers = 8;
                int perDispatcher = 400;
                for (int a = 0; a < 40; a++) {
                    ring.sendAndWait(new Open("tracked-" + a));
                }
                sendFromDispatchers(ring, dispatchers, perDispatcher,
                                    (dispatcher, i) -> new Deposit("tracked-" + ((dispatcher * 7 + i) % 40), 1));

                Set<String> stored = storedEventIdentifiers();
                assertThat(stored).hasSize(40 + dispatchers * perDispatcher);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!seen.keySet().containsAll(stored) && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                Thread.sleep(200); // a duplicate delivered late would show now
                assertThat(seen.keySet()).as("events the tracking processor handled").containsAll(stored);
                assertThat(seen.values().stream().filter(count -> count.get() != 1).count())
                        .as("events handled more than once").isZero();
            } finally {
                processor.shutDown();
            }
        }
    }

    /**
     * One store thread's transaction held open (its subscriber blocks after the append) while the others are sent
     * 12,000 commands: Axon's gap-aware token forgets a gap once it read 10,000 events past it (maxGapOffset), so
     * without a bound the held event would never reach the tracking processor. The others stop short of the bound
     * (half of maxGapOffset past the held transaction) until it commits.
     */
    @Test
    void aTrackingProcessorHandlesAHeldCommitsEventWhileTheOtherStoreThreadsWereSentMoreThanMaxGapOffsetEvents()
            throws Exception {
        String held = accountInShard(0, "held-");
        List<String> others = new ArrayList<>();
        for (int shard = 1; shard < SHARDS; shard++) {
            for (int k = 0; k < 4; k++) {
                others.add(accountInShard(shard, "far-" + k + "-"));
            }
        }
        CountDownLatch holding = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        AtomicInteger seenAfterHeld = new AtomicInteger();
        io.github.ringbus.fixtures.AccountEvents.Deposited heldDeposit =
                new io.github.ringbus.fixtures.AccountEvents.Deposited(held, 99);
        // A ring of 16,384: the default 4,096 holds the others back by itself at 4,096 commands past the held one
        // (the held slot is not freed), which is below maxGapOffset only while a command stores fewer than 3 events.
        try (PostgresRing ring = new PostgresRing(server, null, b -> b.storeThreads(SHARDS).ringSize(16_384))) {
            ring.eventStore.subscribe(events -> {
                if (events.stream().anyMatch(e -> e.getPayload().equals(heldDeposit))) {
                    holding.countDown();
                    try {
                        release.await(120, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            });
            ring.sendAndWait(new Open(held));
            for (String other : others) {
                ring.sendAndWait(new Open(other));
            }
            TrackingEventProcessor processor = trackingProcessor("tracking-past-a-held-commit", ring, 100, event -> {
                seen.computeIfAbsent(event.getIdentifier(), id -> new AtomicInteger()).incrementAndGet();
                if (event.getPayload() instanceof io.github.ringbus.fixtures.AccountEvents.Deposited deposited
                        && !deposited.accountId().equals(held)) {
                    seenAfterHeld.incrementAndGet();
                }
            });
            processor.start();
            try {
                CompletableFuture<CommandResultMessage<Object>> heldResult = ring.send(new Deposit(held, 99));
                assertThat(holding.await(30, TimeUnit.SECONDS)).as("the held transaction appended").isTrue();
                AtomicInteger completed = new AtomicInteger();
                int perAccount = 1_000;
                List<CompletableFuture<CommandResultMessage<Object>>> results = new ArrayList<>();
                Thread dispatching = new Thread(() -> {
                    for (int i = 0; i < perAccount; i++) {
                        for (String other : others) {
                            CompletableFuture<CommandResultMessage<Object>> result = ring.send(new Deposit(other, 1));
                            result.thenRun(completed::incrementAndGet);
                            synchronized (results) {
                                results.add(result);
                            }
                        }
                    }
                });
                dispatching.start();
                // Held until the others stop (the bound) or the processor has read well past maxGapOffset (no bound:
                // then it has forgotten the held event's gap).
                int last = -1;
                long quietSince = System.nanoTime();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
                while (seenAfterHeld.get() < 11_000 && System.nanoTime() < deadline) {
                    int now = completed.get();
                    if (now != last) {
                        last = now;
                        quietSince = System.nanoTime();
                    } else if (System.nanoTime() - quietSince > TimeUnit.MILLISECONDS.toNanos(1_500)) {
                        break;
                    }
                    Thread.sleep(20);
                }
                int completedWhileHeld = completed.get();
                assertThat(heldResult).isNotDone();
                release.countDown();
                dispatching.join(60_000);
                CompletableFuture.allOf(results.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
                assertThat(heldResult.get(30, TimeUnit.SECONDS).isExceptional()).isFalse();
                assertThat(results).allSatisfy(r -> assertThat(r.join().isExceptional()).isFalse());

                Set<String> stored = storedEventIdentifiers("held-%", "far-%");
                assertThat(stored).hasSize(1 + others.size() + 1 + others.size() * perAccount);
                long waitUntil = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!seen.keySet().containsAll(stored) && System.nanoTime() < waitUntil) {
                    Thread.sleep(20);
                }
                Thread.sleep(200); // a duplicate delivered late would show now
                Set<String> missed = new HashSet<>(stored);
                missed.removeAll(seen.keySet());
                assertThat(missed).as("stored events the tracking processor never handled").isEmpty();
                assertThat(completedWhileHeld).as("commands of the other store threads completed while one was held")
                                              .isLessThanOrEqualTo(5_000);
                assertThat(seen.values().stream().filter(count -> count.get() != 1).count())
                        .as("events handled more than once").isZero();
            } finally {
                release.countDown();
                processor.shutDown();
            }
        } finally {
            release.countDown();
        }
    }

    @Test
    void subscribingProcessorsRunInsideTheirCommandsTransactionOnEveryStoreThread() throws Exception {
        Set<String> subscriberThreads = ConcurrentHashMap.newKeySet();
        AtomicInteger outsideTransaction = new AtomicInteger();
        try (PostgresRing ring = new PostgresRing(server, null, b -> b.storeThreads(SHARDS))) {
            Registration subscription = ring.eventStore.subscribe(events -> {
                if (!ring.transactions.isTransactionActive()) {
                    outsideTransaction.incrementAndGet();
                }
                subscriberThreads.add(Thread.currentThread().getName());
                for (EventMessage<?> event : events) {
                    if (event.getPayload() instanceof io.github.ringbus.fixtures.AccountEvents.Deposited deposited
                            && deposited.amount() == 7) {
                        throw new IllegalStateException("the subscriber refuses deposit 7");
                    }
                }
            });
            List<String> accounts = new ArrayList<>();
            for (int i = 0; i < 16; i++) {
                accounts.add("subscribed-" + i);
                ring.sendAndWait(new Open("subscribed-" + i));
            }
            Map<String, CompletableFuture<CommandResultMessage<Object>>> results = new ConcurrentHashMap<>();
            for (long amount = 1; amount <= 10; amount++) {
                for (String account : accounts) {
                    results.put(account + "/" + amount, ring.send(new Deposit(account, amount)));
                }
            }
            CompletableFuture.allOf(results.values().toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
            subscription.cancel();

            assertThat(outsideTransaction).as("subscriber calls outside the store thread's transaction").hasValue(0);
            assertThat(subscriberThreads).hasSizeGreaterThan(1)
                                         .allMatch(name -> name.startsWith("ringbus-store-complete-"));
            for (String account : accounts) {
                assertThat(results.get(account + "/7").join().isExceptional()).isTrue();
                // What the subscriber refused is rolled back with it, and it alone fails: the commands of its
                // aggregate handled on top of it are handled again on what is stored (ReRuns), and stored.
                for (long amount = 1; amount <= 10; amount++) {
                    if (amount != 7) {
                        CommandResultMessage<Object> result = results.get(account + "/" + amount).join();
                        assertThat(result.isExceptional()).as("%s/%d: %s", account, amount,
                                                              result.optionalExceptionResult()).isFalse();
                    }
                }
                assertThat(PostgresRing.storedDeposits(server, account)).as("deposits stored for %s", account)
                        .isEqualTo(LongStream.rangeClosed(1, 10).filter(amount -> amount != 7).boxed().toList());
            }
        }
    }

    /**
     * Sends commands from several threads at once, each its own sequence, and waits until every one completed.
     *
     * @return the outcomes, each thread's in the order it sent them
     */
    private static List<CompletableFuture<CommandResultMessage<Object>>> sendFromDispatchers(
            PostgresRing ring, int dispatchers, int perDispatcher,
            java.util.function.BiFunction<Integer, Integer, Object> command) throws Exception {
        List<CompletableFuture<CommandResultMessage<Object>>> results = new ArrayList<>();
        List<Thread> threads = new ArrayList<>();
        for (int d = 0; d < dispatchers; d++) {
            int dispatcher = d;
            threads.add(new Thread(() -> {
                List<CompletableFuture<CommandResultMessage<Object>>> mine = new ArrayList<>();
                for (int i = 0; i < perDispatcher; i++) {
                    mine.add(ring.send(command.apply(dispatcher, i)));
                }
                synchronized (results) {
                    results.addAll(mine);
                }
            }));
        }
        threads.forEach(Thread::start);
        for (Thread thread : threads) {
            thread.join();
        }
        CompletableFuture.allOf(results.toArray(new CompletableFuture<?>[0])).get(60, TimeUnit.SECONDS);
        return results;
    }

    /** An account identifier, starting with the prefix, whose events the given store thread stores. */
    /** A single-threaded tracking processor on the ring's event store, from its start, with an in-memory token. */
    private static TrackingEventProcessor trackingProcessor(String name, PostgresRing ring, int batchSize,
                                                            java.util.function.Consumer<EventMessage<?>> handler) {
        return TrackingEventProcessor.builder()
                .name(name)
                .eventHandlerInvoker(SimpleEventHandlerInvoker.builder().eventHandlers(
                        (org.axonframework.eventhandling.EventMessageHandler) event -> {
                            handler.accept(event);
                            return null;
                        }).build())
                .messageSource(ring.eventStore)
                .tokenStore(new InMemoryTokenStore())
                .transactionManager(NoTransactionManager.INSTANCE)
                .trackingEventProcessorConfiguration(
                        TrackingEventProcessorConfiguration.forSingleThreadedProcessing().andBatchSize(batchSize))
                .build();
    }

    private static String accountInShard(int shard, String prefix) {
        for (int i = 0; ; i++) {
            String candidate = prefix + i;
            if (RingInternals.storeShardOf(candidate, SHARDS) == shard) {
                return candidate;
            }
        }
    }

    private Set<String> storedEventIdentifiers() throws SQLException {
        return storedEventIdentifiers("tracked-%", "tracked-%");
    }

    private Set<String> storedEventIdentifiers(String like, String orLike) throws SQLException {
        Set<String> identifiers = new HashSet<>();
        try (Connection connection = server.connect(); Statement statement = connection.createStatement();
             ResultSet rows = statement.executeQuery("SELECT eventIdentifier FROM DomainEventEntry WHERE "
                     + "aggregateIdentifier LIKE '" + like + "' OR aggregateIdentifier LIKE '" + orLike + "'")) {
            while (rows.next()) {
                identifiers.add(rows.getString(1));
            }
        }
        return identifiers;
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
