package io.github.ringbus.examples.jpa;

import io.github.ringbus.PipelineMonitor;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import io.github.ringbus.examples.jpa.Ledger.Credit;
import io.github.ringbus.examples.jpa.Ledger.Credited;
import io.github.ringbus.examples.jpa.Ledger.OpenLedger;
import io.github.ringbus.jpa.PostgresJpaEventStorageEngine;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ringbus on Axon's JPA event store (Hibernate, Spring's JPA transactions) on a real PostgreSQL server: the store stage
 * appends batches of commands in one JPA transaction, and a conflicting writer fails only the command that built on
 * the aggregate it changed.
 */
@SpringBootTest
class JpaEventStoreTest {

    /** A real PostgreSQL server for the test (binaries from Maven Central), as the application's DataSource. */
    @TestConfiguration(proxyBeanMethods = false)
    @Import(EmbeddedPostgresDatabase.class)
    static class EmbeddedDatabase {

        /** Every transaction of the store stage, as the number of commands it committed. */
        @Bean
        BatchRecorder batchRecorder() {
            return new BatchRecorder();
        }
    }

    static final class BatchRecorder implements PipelineMonitor {

        final ConcurrentLinkedQueue<Integer> commandsPerCommit = new ConcurrentLinkedQueue<>();

        @Override
        public void appended(int commands, int events) {
            commandsPerCommit.add(commands);
        }
    }

    @Autowired
    private CommandGateway gateway;
    @Autowired
    private CommandBus commandBus;
    @Autowired
    private EventStore eventStore;
    @Autowired
    private EventStorageEngine storageEngine;
    @Autowired
    private TransactionTemplate transactions;
    @Autowired
    private JdbcTemplate jdbc;
    @Autowired
    private BatchRecorder batches;

    @Test
    void theApplicationRunsOnRingbusAndAxonsJpaEventStoreAsRingbusBuildsIt() {
        assertThat(commandBus).isInstanceOf(RingCommandBus.class);
        assertThat(storageEngine).isInstanceOf(JpaEventStorageEngine.class)
                                 .isExactlyInstanceOf(PostgresJpaEventStorageEngine.class);
    }

    @Test
    void eachJpaTransactionOfTheStoreStageInsertsItsEventsInOneStatement() throws Exception {
        jdbc.execute("CREATE TABLE IF NOT EXISTS inserting_statements (statement text)");
        jdbc.execute("CREATE OR REPLACE FUNCTION count_statement() RETURNS trigger AS $$ BEGIN "
                     + "INSERT INTO inserting_statements VALUES (current_query()); RETURN NULL; END $$ "
                     + "LANGUAGE plpgsql");
        jdbc.execute("CREATE TRIGGER count_statement AFTER INSERT ON domain_event_entry "
                     + "FOR EACH STATEMENT EXECUTE FUNCTION count_statement()");
        try {
            for (int i = 0; i < 10; i++) {
                gateway.sendAndWait(new OpenLedger("one-statement-" + i));
            }
            batches.commandsPerCommit.clear();
            jdbc.execute("TRUNCATE inserting_statements");
            List<CompletableFuture<Object>> results = new ArrayList<>();
            for (int round = 1; round <= 20; round++) {
                for (int i = 0; i < 10; i++) {
                    results.add(gateway.send(new Credit("one-statement-" + i, round)));
                }
            }
            for (CompletableFuture<Object> result : results) {
                result.get(30, TimeUnit.SECONDS);
            }

            List<String> statements = jdbc.queryForList("SELECT statement FROM inserting_statements", String.class);
            assertThat(statements).as("one INSERT ... SELECT FROM unnest per JPA transaction")
                                  .hasSize(batches.commandsPerCommit.size())
                                  .allMatch(statement -> statement.contains("unnest("));
        } finally {
            jdbc.execute("DROP TRIGGER count_statement ON domain_event_entry");
        }
    }

    @Test
    void eventPayloadsAndMetadataAreStoredInTheRowAsByteaNotAsLargeObjects() {
        List<String> types = jdbc.queryForList(
                "SELECT data_type FROM information_schema.columns WHERE table_name = 'domain_event_entry' "
                        + "AND column_name IN ('payload', 'meta_data')", String.class);

        assertThat(types).containsExactly("bytea", "bytea");
    }

    @Test
    void commandsSentAtOnceAreCommittedSeveralPerJpaTransactionAndAllStored() throws Exception {
        int ledgers = 20;
        int creditsEach = 25;
        for (int i = 0; i < ledgers; i++) {
            gateway.sendAndWait(new OpenLedger("many-" + i));
        }
        batches.commandsPerCommit.clear();

        List<CompletableFuture<Object>> results = new ArrayList<>();
        for (int round = 1; round <= creditsEach; round++) {
            for (int i = 0; i < ledgers; i++) {
                results.add(gateway.send(new Credit("many-" + i, round)));
            }
        }
        for (CompletableFuture<Object> result : results) {
            result.get(30, TimeUnit.SECONDS);
        }

        int commands = ledgers * creditsEach;
        List<Integer> commits = new ArrayList<>(batches.commandsPerCommit);
        assertThat(commits.stream().mapToInt(Integer::intValue).sum()).isEqualTo(commands);
        assertThat(commits.size()).as("JPA transactions for %d commands: %s", commands, commits)
                                  .isLessThanOrEqualTo(commands / 2);
        Long stored = jdbc.queryForObject(
                "SELECT count(*) FROM domain_event_entry WHERE aggregate_identifier LIKE 'many-%'", Long.class);
        assertThat(stored).isEqualTo((long) ledgers * (1 + creditsEach));
        long total = (long) creditsEach * (creditsEach + 1) / 2;
        assertThat(gateway.<Long>sendAndWait(new Credit("many-7", 0))).isEqualTo(total);
    }

    @Test
    void aCommandOnALedgerAnotherWriterChangedIsHandledAgainOnTheLedgerAsStored() throws Exception {
        gateway.sendAndWait(new OpenLedger("x"));
        gateway.sendAndWait(new OpenLedger("y"));
        assertThat(gateway.<Long>sendAndWait(new Credit("x", 3))).isEqualTo(3L);
        // Another writer (a second replica on the same database) appends to x behind the bus's back: ringbus's
        // cached x is now one event behind, and the unique key refuses its next append (Axon's ConcurrencyException).
        transactions.executeWithoutResult(status -> storageEngine.appendEvents(
                new GenericDomainEventMessage<>("Ledger", "x", 2, new Credited("x", 1000))));

        CompletableFuture<Object> staleX = gateway.send(new Credit("x", 5));
        CompletableFuture<Object> y = gateway.send(new Credit("y", 7));

        // x is read again from the store and the credit handled again on it: it sees the other writer's credit.
        assertThat(staleX.get(30, TimeUnit.SECONDS)).isEqualTo(1008L);
        assertThat(y.get(30, TimeUnit.SECONDS)).isEqualTo(7L);
        assertThat(gateway.<Long>sendAndWait(new Credit("x", 1))).isEqualTo(1009L);
        List<Object> payloads = eventStore.readEvents("x").asStream()
                                          .map(DomainEventMessage::getPayload)
                                          .collect(Collectors.toList());
        assertThat(payloads)
                .containsExactly(new Ledger.LedgerOpened("x"), new Credited("x", 3), new Credited("x", 1000),
                                 new Credited("x", 5), new Credited("x", 1));
    }
}
