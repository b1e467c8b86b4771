package io.github.ringbus.examples.jpa;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import io.github.ringbus.examples.jpa.Ledger.Credit;
import io.github.ringbus.examples.jpa.Ledger.Credited;
import io.github.ringbus.examples.jpa.Ledger.LedgerOpened;
import io.github.ringbus.examples.jpa.Ledger.OpenLedger;
import io.github.ringbus.jpa.PostgresJpaEventStorageEngine;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The application as a Spring Boot user without the example's tuning has it: Hibernate's own PostgreSQL dialect, so
 * Axon's payload and metadata columns are {@code oid} (large objects), and no JDBC batching. ringbus's JPA engine
 * stores each batch in one statement there too, its large objects made on the server, and Axon reads them back
 * ({@link JpaBulkAppendOffTest}: {@code ringbus.jpa-bulk-append=false} leaves Axon's own engine).
 */
@SpringBootTest(properties = {
        "spring.jpa.database-platform=org.hibernate.dialect.PostgreSQLDialect",
        "spring.jpa.properties.hibernate.jdbc.batch_size=0",
        "spring.jpa.properties.hibernate.order_inserts=false"})
class BootJpaDefaultsTest {

    /** A real PostgreSQL server for the test, as the application's DataSource. */
    @TestConfiguration(proxyBeanMethods = false)
    @Import(EmbeddedPostgresDatabase.class)
    static class EmbeddedDatabase {
    }

    @Autowired
    private CommandGateway gateway;
    @Autowired
    private EventStore eventStore;
    @Autowired
    private EventStorageEngine storageEngine;
    @Autowired
    private JdbcTemplate jdbc;

    @Test
    void eventsAreStoredAsLargeObjectsInOneStatementPerBatchAndReadBack() throws Exception {
        assertThat(storageEngine).isExactlyInstanceOf(PostgresJpaEventStorageEngine.class);
        assertThat(jdbc.queryForList("SELECT data_type FROM information_schema.columns WHERE table_name = "
                                     + "'domain_event_entry' AND column_name IN ('payload', 'meta_data')",
                                     String.class)).containsExactly("oid", "oid");
        jdbc.execute("CREATE TABLE inserting_statements (statement text)");
        jdbc.execute("CREATE FUNCTION count_statement() RETURNS trigger AS $$ BEGIN "
                     + "INSERT INTO inserting_statements VALUES (current_query()); RETURN NULL; END $$ "
                     + "LANGUAGE plpgsql");
        jdbc.execute("CREATE TRIGGER count_statement AFTER INSERT ON domain_event_entry "
                     + "FOR EACH STATEMENT EXECUTE FUNCTION count_statement()");
        gateway.sendAndWait(new OpenLedger("lo"));
        List<CompletableFuture<Object>> credits = new ArrayList<>();
        for (int amount = 1; amount <= 50; amount++) {
            credits.add(gateway.send(new Credit("lo", amount)));
        }
        for (CompletableFuture<Object> credit : credits) {
            credit.get(30, TimeUnit.SECONDS);
        }

        List<Object> payloads = eventStore.readEvents("lo").asStream().map(DomainEventMessage::getPayload)
                                          .collect(Collectors.toList());
        assertThat(payloads).hasSize(51).startsWith(new LedgerOpened("lo"), new Credited("lo", 1))
                            .endsWith(new Credited("lo", 50));
        assertThat(jdbc.queryForList("SELECT statement FROM inserting_statements", String.class))
                .as("each batch one INSERT ... SELECT FROM unnest, never Hibernate's INSERT of one entity")
                .isNotEmpty().allMatch(statement -> statement.contains("unnest("));
        assertThat(jdbc.queryForObject("SELECT count(DISTINCT payload) FROM domain_event_entry "
                                       + "WHERE aggregate_identifier = 'lo'", Long.class))
                .as("a large object of its own for each payload").isEqualTo(51L);
    }
}
