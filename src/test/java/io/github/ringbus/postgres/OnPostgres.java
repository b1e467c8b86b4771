package io.github.ringbus.postgres;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * A test class with a real PostgreSQL server of its own ({@link PostgresServer#startForTests()}), started before its
 * first test and removed, data and all, after its last.
 */
abstract class OnPostgres {

    static PostgresServer server;

    @BeforeAll
    static void startPostgres() {
        server = PostgresServer.startForTests();
    }

    @AfterAll
    static void stopPostgres() {
        if (server != null) {
            server.close();
            server = null;
        }
    }
}
