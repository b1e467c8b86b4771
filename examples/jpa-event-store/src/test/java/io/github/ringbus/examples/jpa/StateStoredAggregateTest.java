package io.github.ringbus.examples.jpa;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import io.github.ringbus.examples.jpa.Counter.CreateCounter;
import io.github.ringbus.examples.jpa.Counter.Increment;
import io.github.ringbus.examples.jpa.Counter.IncrementThenFail;
import io.github.ringbus.examples.jpa.Counter.IncrementThenVeto;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.common.lock.LockFactory;
import org.axonframework.common.lock.PessimisticLockFactory;
import org.axonframework.modelling.command.GenericJpaRepository;
import org.axonframework.modelling.command.Repository;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A state-stored aggregate (a JPA entity, Axon's {@code GenericJpaRepository} with Axon's
 * {@code PessimisticLockFactory}) under Spring Boot on ringbus with two handler threads, on a real PostgreSQL server.
 * Each of its commands runs whole on the handler thread that owns its aggregate, inside one JPA transaction: load
 * (with lock), handle, save, append of its events, commit, release of the lock.
 */
@SpringBootTest(properties = "ringbus.handler-threads=2")
class StateStoredAggregateTest {

    @TestConfiguration(proxyBeanMethods = false)
    @Import(EmbeddedPostgresDatabase.class)
    static class EmbeddedDatabase {

        /**
         * Axon's pessimistic lock for the JPA aggregate (Axon's Spring support would give it a NullLockFactory):
         * the lock ringbus must take and release on one thread. A lock not released waits at most 2 s.
         */
        @Bean
        LockFactory lockFactory() {
            return PessimisticLockFactory.builder().acquireAttempts(200).lockAttemptTimeout(10).build();
        }
    }

    @Autowired
    private CommandGateway gateway;
    @Autowired
    private CommandBus commandBus;
    @Autowired
    private org.axonframework.config.Configuration axon;
    @Autowired
    private JdbcTemplate jdbc;

    @Test
    void theCounterIsAStateStoredAggregateWithAxonsJpaRepositoryOnTheRing() {
        Repository<Counter> repository = axon.repository(Counter.class);

        assertThat(commandBus).isInstanceOf(RingCommandBus.class);
        assertThat(repository).isInstanceOf(GenericJpaRepository.class);
    }

    @Test
    void manyCommandsFromSeveralDispatchersOnAFewCountersAllSucceedInOrderWithExactCounts() throws Exception {
        int counters = 4;
        int dispatchers = 4;
        int perDispatcherAndCounter = 25;
        for (int c = 0; c < counters; c++) {
            gateway.sendAndWait(new CreateCounter("many-" + c));
        }

        ExecutorService pool = Executors.newFixedThreadPool(dispatchers);
        try {
            List<Future<List<CompletableFuture<Object>>>> sent = new ArrayList<>();
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                sent.add(pool.submit(() -> {
                    List<CompletableFuture<Object>> results = new ArrayList<>();
                    for (int n = 1; n <= perDispatcherAndCounter; n++) {
                        for (int c = 0; c < counters; c++) {
                            results.add(gateway.send(new Increment("many-" + c, dispatcher, n)));
                        }
                    }
                    return results;
                }));
            }
            for (Future<List<CompletableFuture<Object>>> dispatched : sent) {
                for (CompletableFuture<Object> result : dispatched.get(30, TimeUnit.SECONDS)) {
                    result.get(30, TimeUnit.SECONDS);
                }
            }
        } finally {
            pool.shutdownNow();
        }

        long expected = (long) dispatchers * perDispatcherAndCounter;
        for (int c = 0; c < counters; c++) {
            String id = "many-" + c;
            Map<String, Object> row = jdbc.queryForMap(
                    "SELECT count, out_of_order FROM state_stored_counter WHERE counter_id = ?", id);
            assertThat(row.get("count")).as("count of %s", id).isEqualTo(expected);
            assertThat(row.get("out_of_order")).as("commands of %s out of order", id).isEqualTo(0L);
            List<Long> sequenceNumbers = jdbc.queryForList(
                    "SELECT sequence_number FROM domain_event_entry WHERE aggregate_identifier = ? "
                            + "ORDER BY sequence_number", Long.class, id);
            assertThat(sequenceNumbers).as("events of %s", id).hasSize((int) expected + 1);
            assertThat(sequenceNumbers.get(sequenceNumbers.size() - 1)).isEqualTo(expected);
        }
    }

    @Test
    void eachCountersCommandsRunOnOneRingbusHandlerThread() {
        for (int c = 0; c < 6; c++) {
            gateway.sendAndWait(new CreateCounter("thread-" + c));
        }
        List<CompletableFuture<Object>> results = new ArrayList<>();
        for (int n = 1; n <= 20; n++) {
            for (int c = 0; c < 6; c++) {
                results.add(gateway.send(new Increment("thread-" + c, 0, n)));
            }
        }
        results.forEach(CompletableFuture::join);

        for (int c = 0; c < 6; c++) {
            assertThat(Counter.HANDLER_THREADS.get("thread-" + c))
                    .as("threads of counter thread-%d", c)
                    .hasSize(1)
                    .allMatch(name -> name.startsWith("ringbus-handle-"));
        }
    }

    @Test
    void aHandlerThatThrowsAfterApplyLeavesTheEntityAndTheEventStoreAsTheyWere() {
        gateway.sendAndWait(new CreateCounter("fails"));
        gateway.sendAndWait(new Increment("fails", 0, 1));

        Throwable failure = catchThrowable(() -> gateway.sendAndWait(new IncrementThenFail("fails")));

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessage("refused after apply");
        assertUnchangedAfterOneIncrement("fails");
        assertThat(gateway.<Long>sendAndWait(new Increment("fails", 0, 2))).isEqualTo(2L);
    }

    @Test
    void aCommandVetoedAfterItsEventWasAppendedCommitsNeitherTheEntityNorTheEvent() {
        gateway.sendAndWait(new CreateCounter("vetoed"));
        gateway.sendAndWait(new Increment("vetoed", 0, 1));

        Throwable failure = catchThrowable(() -> gateway.sendAndWait(new IncrementThenVeto("vetoed")));

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessage("vetoed at prepare commit");
        assertUnchangedAfterOneIncrement("vetoed");
        assertThat(gateway.<Long>sendAndWait(new Increment("vetoed", 0, 2))).isEqualTo(2L);
    }

    private void assertUnchangedAfterOneIncrement(String id) {
        assertThat(jdbc.queryForObject("SELECT count FROM state_stored_counter WHERE counter_id = ?", Long.class, id))
                .isEqualTo(1L);
        assertThat(jdbc.queryForList("SELECT sequence_number FROM domain_event_entry WHERE aggregate_identifier = ? "
                                             + "ORDER BY sequence_number", Long.class, id))
                .containsExactly(0L, 1L);
    }
}
