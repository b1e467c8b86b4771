package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * "Preload-stage thread only" ({@link RingRepository#preload}, {@link RingRepository#readAhead}) is held, with
 * assertions on (every test run): the first thread that preloads is the only one that may. Every test of a bus then
 * checks that its preload stage (or, on COMPACT, its one handler thread running a command in place) is that thread.
 */
class PreloadingThreadTest {

    private final EmbeddedEventStore store = RingEventStore.builder()
                                                           .storageEngine(new InMemoryEventStorageEngine()).build();

    @AfterEach
    void shutDown() {
        store.shutDown();
    }

    @Test
    void assertionsAreOnInTheTests() {
        boolean on = false;
        assert on = true;
        assertThat(on).as("the claim is only checked with -ea").isTrue();
    }

    @Test
    @SuppressWarnings("unchecked")
    void aSecondThreadThatPreloadsFailsNamingBothThreads() throws Exception {
        RingCommandBus bus = RingCommandBus.builder().eventStore(store).build();
        RingRepository<Account> repository = (RingRepository<Account>) bus.registerAggregate(Account.class);
        repository.preloaded().preload("first", true, false, 0, null);

        CompletableFuture<Object> elsewhere = CompletableFuture.supplyAsync(() -> {
            try {
                return repository.preloaded().preload("second", true, false, 1, null);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });

        assertThatThrownBy(elsewhere::get).isInstanceOf(ExecutionException.class)
                                          .hasCauseInstanceOf(AssertionError.class)
                                          .hasMessageContaining("preload stage's thread only")
                                          .hasMessageContaining(Thread.currentThread().getName());
    }
}
