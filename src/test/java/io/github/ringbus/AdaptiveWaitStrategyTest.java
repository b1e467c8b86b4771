package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link WaitStrategyChoice#ADAPTIVE}: stage threads of an idle bus block (no CPU), and the next command wakes them.
 */
class AdaptiveWaitStrategyTest {

    private final RingCommandBus bus = RingCommandBus.builder()
                                                     .eventStore(RingEventStore.builder()
                                                                               .storageEngine(
                                                                                       new InMemoryEventStorageEngine())
                                                                               .build())
                                                     .waitStrategy(WaitStrategyChoice.ADAPTIVE)
                                                     .publishMode(PublishMode.PARALLEL)
                                                     .handlerThreads(2)
                                                     .threadNamePrefix("adaptive")
                                                     .build();

    @AfterEach
    void shutdown() {
        bus.shutdown();
    }

    @Test
    void everyStageThreadOfAnIdleBusBlocksInsteadOfWakingOverAndOver() throws Exception {
        bus.registerAggregate(Account.class);
        bus.start();
        send(new Open("a"));

        awaitEveryStageThreadBlocked();
    }

    @Test
    void aCommandHandedOverWhileEveryStageThreadIsBlockedIsHandled() throws Exception {
        bus.registerAggregate(Account.class);
        bus.start();
        send(new Open("a"));
        awaitEveryStageThreadBlocked();

        assertThat(send(new Deposit("a", 10))).isEqualTo(10L);
        awaitEveryStageThreadBlocked();
        assertThat(send(new Deposit("a", 5))).isEqualTo(15L);
    }

    @Test
    void shutdownEndsStageThreadsThatAreBlocked() throws Exception {
        bus.start();
        awaitEveryStageThreadBlocked();

        bus.shutdown();

        assertThat(stageThreads()).isEmpty();
    }

    @Test
    void everyStoreThreadOfAnIdleBusBlocksToo() throws Exception {
        RingCommandBus shards = RingCommandBus.builder()
                                              .eventStore(RingEventStore.builder()
                                                                        .storageEngine(new InMemoryEventStorageEngine())
                                                                        .build())
                                              .waitStrategy(WaitStrategyChoice.ADAPTIVE)
                                              .handlerThreads(1)
                                              .storeThreads(3)
                                              .threadNamePrefix("idle-shards")
                                              .build();
        shards.registerAggregate(Account.class);
        shards.start();
        try {
            FutureCallback<Object, Object> opened = new FutureCallback<>();
            shards.dispatch(asCommandMessage(new Open("a")), opened);
            assertThat(opened.get(10, TimeUnit.SECONDS).isExceptional()).isFalse();

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            List<Thread> threads;
            do {
                Thread.sleep(10);
                threads = Thread.getAllStackTraces().keySet().stream()
                                .filter(thread -> thread.getName().startsWith("idle-shards-") && thread.isAlive()
                                        && !thread.getName().endsWith("-snapshot"))
                                .collect(Collectors.toList());
            } while (!threads.stream().allMatch(thread -> thread.getState() == Thread.State.WAITING)
                    && System.nanoTime() - deadline < 0);
            assertThat(threads).as("preload, handle-0, store-complete-0..2, callbacks").hasSize(6)
                               .allMatch(thread -> thread.getState() == Thread.State.WAITING,
                                         "blocked (WAITING) after 10 s idle");
        } finally {
            shards.shutdown();
        }
    }

    private Object send(Object command) throws Exception {
        FutureCallback<Object, Object> callback = new FutureCallback<>();
        bus.dispatch(asCommandMessage(command), callback);
        return callback.get(10, TimeUnit.SECONDS).getPayload();
    }

    private static List<Thread> stageThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                     .filter(thread -> thread.getName().startsWith("adaptive-") && thread.isAlive()
                             && !thread.getName().endsWith("-snapshot"))
                     .collect(Collectors.toList());
    }

    /** Blocked: waiting on a monitor with no timeout, as opposed to parked for a while (TIMED_WAITING). */
    private static void awaitEveryStageThreadBlocked() throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        List<String> notBlocked;
        do {
            notBlocked = stageThreads().stream()
                                       .filter(thread -> thread.getState() != Thread.State.WAITING)
                                       .map(thread -> thread.getName() + " " + thread.getState())
                                       .collect(Collectors.toList());
            if (notBlocked.isEmpty() && stageThreads().size() == 7) {
                return;
            }
            Thread.sleep(10);
        } while (System.nanoTime() - deadline < 0);
        assertThat(notBlocked).as("stage threads not blocked after 10 s idle").isEmpty();
        assertThat(stageThreads()).as("stage threads: preload, 2 handle, store, publish, complete; callbacks")
                                  .hasSize(7);
    }
}
