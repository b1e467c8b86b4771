package io.github.ringbus.examples.bank;

import io.github.ringbus.examples.bank.account.AccountCommands.DepositMoney;
import io.github.ringbus.examples.bank.account.AccountCommands.OpenAccount;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ring in {@code /actuator/health} of the running application, over HTTP, on a real PostgreSQL server that goes
 * away and comes back: {@code UP}, then {@code DOWN} (503) with the store's failure while every append fails, then
 * {@code UP} again once a command is stored, without a restart of the application.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"ringbus.health.store-failure-window=0s", "management.endpoint.health.show-details=always",
                "management.endpoint.health.probes.enabled=true",
                "management.endpoint.health.group.readiness.include=readinessState,ringbus"})
class HealthEndpointTest {

    private static final Path DATA;
    private static EmbeddedPostgres server;
    private static int port;

    static {
        // pgjdbc asserts that getAutoCommit() does not throw while it ends a batch, which it does once the connection
        // is lost: under -ea (as in tests) an AssertionError instead of the SQLException production (no -ea) sees.
        HealthEndpointTest.class.getClassLoader().setPackageAssertionStatus("org.postgresql", false);
        try {
            DATA = Files.createTempDirectory("bank-health-pg");
            server = EmbeddedPostgres.builder().setDataDirectory(DATA).setCleanDataDirectory(false)
                                     .setRegisterShutdownHook(false).start();
            port = server.getPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @DynamicPropertySource
    static void database(DynamicPropertyRegistry properties) {
        properties.add("spring.datasource.url", () -> "jdbc:postgresql://localhost:" + port + "/postgres");
        properties.add("spring.datasource.username", () -> "postgres");
        properties.add("spring.datasource.password", () -> "postgres");
        properties.add("spring.datasource.hikari.connection-timeout", () -> "1000");
    }

    @AfterAll
    static void stopServer() throws IOException {
        server.close();
    }

    @LocalServerPort
    private int httpPort;

    @Autowired
    private CommandGateway commands;

    private HttpResponse<String> health() throws IOException, InterruptedException {
        return get("/actuator/health/ringbus");
    }

    private HttpResponse<String> get(String path) throws IOException, InterruptedException {
        return HttpClient.newHttpClient().send(
                HttpRequest.newBuilder(URI.create("http://localhost:" + httpPort + path)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private boolean deposit(String account, long amount) {
        try {
            commands.sendAndWait(new DepositMoney(account, amount));
            return true;
        } catch (RuntimeException failed) {
            return false;
        }
    }

    @Test
    void theRingGoesDownWithTheDatabaseAndComesBackUpWithItWithoutARestart() throws Exception {
        commands.sendAndWait(new OpenAccount("health", "operator"));
        HttpResponse<String> up = health();
        assertThat(up.statusCode()).isEqualTo(200);
        assertThat(up.body()).contains("\"status\":\"UP\"", "\"topology\"", "\"storeFailedCommandsInLastMinute\":0",
                                       "\"databaseRoundTripAtStart\"");

        server.close();
        assertThat(deposit("health", 1)).as("a deposit while the database is away").isFalse();

        HttpResponse<String> down = health();
        assertThat(down.statusCode()).isEqualTo(503);
        assertThat(down.body()).contains("\"status\":\"DOWN\"", "lastStoreFailure", "every store attempt has failed")
                               .doesNotContain("\"storeFailedCommandsInLastMinute\":0");
        // Not ready (out of the load balancer), but alive: an outage of the database is no reason to restart.
        assertThat(get("/actuator/health/readiness").statusCode()).isEqualTo(503);
        assertThat(get("/actuator/health/liveness").statusCode()).isEqualTo(200);

        server = EmbeddedPostgres.builder().setDataDirectory(DATA).setCleanDataDirectory(false).setPort(port)
                                 .setRegisterShutdownHook(false).start();
        boolean stored = false;
        for (int attempt = 0; attempt < 50 && !stored; attempt++) {
            stored = deposit("health", 2); // the pool replaces the connections the stop broke
            if (!stored) {
                Thread.sleep(200);
            }
        }
        assertThat(stored).as("a deposit once the database is back").isTrue();
        HttpResponse<String> back = health();
        assertThat(back.statusCode()).isEqualTo(200);
        assertThat(back.body()).contains("\"status\":\"UP\"").doesNotContain("lastStoreFailure");
        assertThat(get("/actuator/health/readiness").statusCode()).isEqualTo(200);
    }
}
