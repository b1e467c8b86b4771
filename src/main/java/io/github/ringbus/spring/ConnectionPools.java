package io.github.ringbus.spring;

import java.lang.reflect.Method;
import java.util.List;

/**
 * The size of the application's connection pool, read from the pools Spring Boot configures (HikariCP, its default;
 * Commons DBCP 2; Tomcat JDBC) by their public getters, so that ringbus needs none of them on its class path. Used to
 * keep ringbus's default reads ahead within the pool ({@code RingCommandBus.Builder#connectionPoolSize}).
 */
final class ConnectionPools {

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
}
