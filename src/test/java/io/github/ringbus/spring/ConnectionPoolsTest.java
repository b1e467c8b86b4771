package io.github.ringbus.spring;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** {@link ConnectionPools}: the size of a known pool, 0 for anything else. */
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
}
