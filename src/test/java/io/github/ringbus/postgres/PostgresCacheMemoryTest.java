package io.github.ringbus.postgres;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import org.axonframework.eventhandling.EventMessage;
import org.junit.jupiter.api.Test;

import java.lang.ref.WeakReference;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a cached aggregate keeps in memory on a storage engine that keeps no event objects itself (Axon's JDBC engine;
 * the in-memory engine keeps them all): once its events are stored and the handler thread has moved on to other
 * commands, nothing of the ring holds them, though the aggregate stays cached for its next command.
 */
class PostgresCacheMemoryTest extends OnPostgres {

    @Test
    void aCachedAggregateLetsGoOfItsStoredEventsWhileOtherCommandsRun() throws Exception {
        try (PostgresRing ring = new PostgresRing(server)) {
            AtomicReference<WeakReference<EventMessage<?>>> deposited = new AtomicReference<>();
            ring.eventStore.subscribe(events -> events.forEach(event -> {
                if (event.getPayload() instanceof Deposited payload && payload.accountId().equals("kept")) {
                    deposited.set(new WeakReference<>(event));
                }
            }));
            ring.sendAndWait(new Open("kept"));
            ring.sendAndWait(new Deposit("kept", 5));

            for (int i = 0; i < 20; i++) { // other aggregates' commands: the handler threads start later batches
                ring.sendAndWait(new Open("other-" + i));
            }

            assertThat(collected(deposited.get(), 10_000))
                    .as("the stored deposit of the cached account, held by nothing once stored").isTrue();
            assertThat(ring.sendAndWait(new Deposit("kept", 1)).getPayload())
                    .as("the account was still cached and right").isEqualTo(6L);
        }
    }

    /** Asks for garbage collections until the referent is gone, for at most {@code millis}. */
    private static boolean collected(WeakReference<?> reference, long millis) throws InterruptedException {
        long deadline = System.nanoTime() + millis * 1_000_000;
        while (reference.get() != null && System.nanoTime() < deadline) {
            System.gc();
            Thread.sleep(50);
        }
        return reference.get() == null;
    }
}
