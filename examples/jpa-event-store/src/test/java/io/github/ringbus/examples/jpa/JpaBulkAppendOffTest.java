package io.github.ringbus.examples.jpa;

import static org.assertj.core.api.Assertions.assertThat;

import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jpa.JpaEventStorageEngine;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Import;

/** {@code ringbus.jpa-bulk-append=false}: the application's event storage engine is Axon's own JPA engine. */
@SpringBootTest(properties = "ringbus.jpa-bulk-append=false")
class JpaBulkAppendOffTest {

    /** A real PostgreSQL server for the test, as the application's DataSource. */
    @TestConfiguration(proxyBeanMethods = false)
    @Import(EmbeddedPostgresDatabase.class)
    static class EmbeddedDatabase {
    }

    @Autowired
    private EventStorageEngine storageEngine;

    @Test
    void theEngineIsAxonsOwn() {
        assertThat(storageEngine).isExactlyInstanceOf(JpaEventStorageEngine.class);
    }
}
