package io.github.ringbus.spring;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Method;
import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.sql.DataSource;

/**
 * What the bus's defaults need to know of the application's connection pool: its size, read from the pools Spring
 * Boot configures (HikariCP, its default; Commons DBCP 2; Tomcat JDBC) by their public getters, so that ringbus needs
 * none of them on its class path ({@code RingCommandBus.Builder#connectionPoolSize}); and the database's round trip,
 * measured on one of its connections ({@code RingCommandBus.Builder#databaseLatency}).
 */
final class ConnectionPools {

    private static final Logger logger = LoggerFactory.getLogger(ConnectionPools.class);

    /** Validations timed: the fastest is the round trip. */
    static final int ROUND_TRIPS_TIMED = 10;
    /** The most a start-up waits for the measurement (a database that cannot be reached must not hold it longer). */
    static final Duration MEASURING_AT_MOST = Duration.ofSeconds(2);

    /** The getters of the pools' largest size: HikariCP, Commons DBCP 2, Tomcat JDBC. */
    static final List<String> SIZE_GETTERS = List.of("getMaximumPoolSize", "getMaxTotal", "getMaxActive");

    private ConnectionPools() {
    }

    /**
     * @param dataSource the application's data source, or null
     * @return its pool's largest size; 0 when there is none, or it is not one of the pools above
     */
    static int sizeOf(Object dataSource) {
        if (dataSource == null) {
            return 0;
        }
        for (String getter : SIZE_GETTERS) {
            try {
                Method method = dataSource.getClass().getMethod(getter);
                if (method.getReturnType() == int.class) {
                    int size = (int) method.invoke(dataSource);
                    return Math.max(0, size);
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                // not this pool
            }
        }
        return 0;
    }

    /**
     * The round trip to the database: the fastest of {@value #ROUND_TRIPS_TIMED} validations
     * ({@link Connection#isValid}, one round trip on PostgreSQL's and most drivers) of one connection of the pool,
     * after one untimed. The fastest, not the median: a busy machine only ever adds time to a validation (five starts
     * on a busy machine measured a loopback database 244 to 3,346 us away by the median), and the fastest of ten is
     * what the network and the server take. Runs on a thread of its own and waits at most {@link #MEASURING_AT_MOST}: a database that
     * cannot be reached at start-up leaves the latency unknown, and the application starts as it would have.
     *
     * @param dataSource the application's data source, or null
     * @return the round trip, or null when there is no data source or it could not be measured in time
     */
    static Duration roundTripOf(Object dataSource) {
        if (!(dataSource instanceof DataSource source)) {
            return null;
        }
        CompletableFuture<Duration> measured = new CompletableFuture<>();
        Thread measuring = new Thread(() -> {
            try {
                measured.complete(measure(source));
            } catch (Throwable failure) {
                measured.completeExceptionally(failure);
            }
        }, "ringbus-database-latency");
        measuring.setDaemon(true);
        measuring.start();
        try {
            return measured.get(MEASURING_AT_MOST.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            logger.info("ringbus could not measure the database's round trip within {}: the defaults go by the cores "
                                + "(set ringbus.database-latency to state it)", MEASURING_AT_MOST);
        } catch (ExecutionException e) {
            logger.info("ringbus could not measure the database's round trip: {} (set ringbus.database-latency to "
                                + "state it)", e.getCause().toString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return null;
    }

    private static Duration measure(DataSource source) throws SQLException {
        try (Connection connection = source.getConnection()) {
            connection.isValid(1); // untimed: a connection just opened may still be settling
            long[] nanos = new long[ROUND_TRIPS_TIMED];
            for (int i = 0; i < nanos.length; i++) {
                long start = System.nanoTime();
                if (!connection.isValid(1)) {
                    throw new SQLException("the connection did not validate");
                }
                nanos[i] = System.nanoTime() - start;
            }
            Arrays.sort(nanos);
            return Duration.ofNanos(nanos[0]);
        }
    }
}
