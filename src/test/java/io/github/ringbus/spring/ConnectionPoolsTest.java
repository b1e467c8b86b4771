package io.github.ringbus.spring;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link ConnectionPools}: the size of a known pool, 0 for anything else; the round trip of a database that answers,
 * none of one that does not, within the measurement's bound.
 */
class ConnectionPoolsTest {

    @Test
    void aHikariPoolsMaximumSizeIsRead() {
        try (HikariDataSource pool = new HikariDataSource()) {
            pool.setMaximumPoolSize(23);
            assertThat(ConnectionPools.sizeOf(pool)).isEqualTo(23);
        }
    }

    @Test
    void anUnknownDataSourceOrNoneHasNoKnownSize() {
        assertThat(ConnectionPools.sizeOf(new org.postgresql.ds.PGSimpleDataSource())).isZero();
        assertThat(ConnectionPools.sizeOf(null)).isZero();
    }

    @Test
    void theRoundTripOfARealDatabaseIsMeasuredOnOneOfItsConnections() throws IOException {
        try (EmbeddedPostgres postgres = EmbeddedPostgres.start();
             HikariDataSource pool = new HikariDataSource()) {
            pool.setDataSource(postgres.getPostgresDatabase());
            Duration roundTrip = ConnectionPools.roundTripOf(pool);

            assertThat(roundTrip).isPositive().isLessThan(Duration.ofSeconds(1));
            assertThat(pool.getHikariPoolMXBean().getActiveConnections()).as("the connection went back").isZero();
        }
    }

    @Test
    void aDatabaseThatNeverAnswersLeavesTheRoundTripUnknownAndHoldsTheStartBriefly() throws IOException {
        try (ServerSocket silent = new ServerSocket(0)) {
            Thread acceptor = new Thread(() -> {
                try (Socket accepted = silent.accept()) {
                    Thread.sleep(60_000); // accepts, never speaks: the driver waits for the server's greeting
                } catch (IOException | InterruptedException e) {
                    // the test ended
                }
            });
            acceptor.setDaemon(true);
            acceptor.start();
            org.postgresql.ds.PGSimpleDataSource source = new org.postgresql.ds.PGSimpleDataSource();
            source.setUrl("jdbc:postgresql://localhost:" + silent.getLocalPort() + "/never-answers");
            long start = System.nanoTime();

            assertThat(ConnectionPools.roundTripOf(source)).isNull();
            assertThat(Duration.ofNanos(System.nanoTime() - start))
                    .as("bounded by the measurement, not the driver's timeouts")
                    .isLessThan(ConnectionPools.MEASURING_AT_MOST.multipliedBy(3));
            acceptor.interrupt();
        }
    }

    @Test
    void aDatabaseThatRefusesConnectionsOrNoneHasNoRoundTrip() {
        try (HikariDataSource pool = new HikariDataSource()) {
            pool.setJdbcUrl("jdbc:postgresql://localhost:1/never-connected");
            assertThat(ConnectionPools.roundTripOf(pool)).isNull();
        }
        assertThat(ConnectionPools.roundTripOf(null)).isNull();
    }

    /** A data source whose connection's validations take these milliseconds each, in turn (the first untimed). */
    private static javax.sql.DataSource validatingIn(long... millis) {
        java.util.concurrent.atomic.AtomicInteger call = new java.util.concurrent.atomic.AtomicInteger();
        java.sql.Connection connection = (java.sql.Connection) java.lang.reflect.Proxy.newProxyInstance(
                ConnectionPoolsTest.class.getClassLoader(), new Class<?>[]{java.sql.Connection.class},
                (proxy, method, args) -> switch (method.getName()) {
                    case "isValid" -> {
                        Thread.sleep(millis[Math.min(call.getAndIncrement(), millis.length - 1)]);
                        yield true;
                    }
                    case "close" -> null;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
        return (javax.sql.DataSource) java.lang.reflect.Proxy.newProxyInstance(
                ConnectionPoolsTest.class.getClassLoader(), new Class<?>[]{javax.sql.DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection")) {
                        return connection;
                    }
                    throw new UnsupportedOperationException(method.getName());
                });
    }

    @Test
    void theRoundTripIsTheFastestValidationNotAMedianABusyMachineInflated() {
        // One untimed, then ten: a busy machine made most of them slow (100 ms); one shows the round trip itself (no
        // wait at all). The bound is half the slow ones, not a speed: a median or a mean would be 100 ms or near it,
        // and a loaded machine (load 20 on 2 cores) still runs a call that does not sleep well within 50 ms.
        Duration roundTrip = ConnectionPools.roundTripOf(validatingIn(0, 100, 100, 100, 100, 0, 100, 100, 100, 100,
                                                                      100));

        assertThat(roundTrip).isLessThan(Duration.ofMillis(50));
    }
}
