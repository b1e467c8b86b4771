package io.github.ringbus.examples;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.io.IOException;

/**
 * A real PostgreSQL server for an example's application (its binaries from Maven Central, no Docker), as the
 * application's DataSource: each application imports it ({@code @Import}); it is in no application's package, so none
 * finds it by scanning.
 */
@Configuration(proxyBeanMethods = false)
public class EmbeddedPostgresDatabase {

    @Bean(destroyMethod = "close")
    EmbeddedPostgres embeddedPostgres() throws IOException {
        return EmbeddedPostgres.builder().setRegisterShutdownHook(false).start();
    }

    @Bean(destroyMethod = "close")
    HikariDataSource dataSource(EmbeddedPostgres postgres) {
        HikariDataSource dataSource = new HikariDataSource();
        dataSource.setJdbcUrl(postgres.getJdbcUrl("postgres", "postgres"));
        dataSource.setMaximumPoolSize(10);
        return dataSource;
    }
}
