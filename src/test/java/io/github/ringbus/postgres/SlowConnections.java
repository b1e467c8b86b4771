package io.github.ringbus.postgres;

import javax.sql.DataSource;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.CallableStatement;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A database that is slow for a while: wraps a {@link DataSource} so that, while {@link #slowBy} is set, every call
 * that is a round trip to the server (a statement's {@code execute*}, {@code commit}, {@code rollback}) waits that
 * long before it is sent, as a network with that much more latency would make it wait. Set and reset by the test's
 * thread, read by every thread that uses a connection (a volatile field).
 */
final class SlowConnections {

    private volatile long delayNanos;

    /** From now on every round trip waits {@code millis} more; 0 for none. */
    void slowBy(long millis) {
        delayNanos = TimeUnit.MILLISECONDS.toNanos(millis);
    }

    /** @return {@code pool}, its connections slowed down by this */
    DataSource wrap(DataSource pool) {
        return (DataSource) Proxy.newProxyInstance(
                DataSource.class.getClassLoader(), new Class<?>[]{DataSource.class}, (proxy, method, args) -> {
                    Object result = invoke(pool, method, args);
                    return result instanceof Connection connection ? slowed(connection, Connection.class) : result;
                });
    }

    private <T> T slowed(T target, Class<T> type) {
        InvocationHandler handler = (proxy, method, args) -> {
            String name = method.getName();
            if (name.startsWith("execute") || name.equals("commit") || name.equals("rollback")) {
                pause();
            }
            Object result = invoke(target, method, args);
            if (result instanceof CallableStatement statement) {
                return slowed(statement, CallableStatement.class);
            }
            if (result instanceof PreparedStatement statement) {
                return slowed(statement, PreparedStatement.class);
            }
            if (result instanceof Statement statement && !(target instanceof Statement)) {
                return slowed(statement, Statement.class);
            }
            return result;
        };
        return type.cast(Proxy.newProxyInstance(type.getClassLoader(), new Class<?>[]{type}, handler));
    }

    private void pause() {
        long delay = delayNanos;
        long until = System.nanoTime() + delay;
        while (delay > 0 && System.nanoTime() < until) {
            LockSupport.parkNanos(until - System.nanoTime());
        }
    }

    private static Object invoke(Object target, Method method, Object[] args) throws Throwable {
        try {
            return method.invoke(target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }
}
