package io.github.ringbus.examples.setbased;

import com.zaxxer.hikari.HikariDataSource;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.axonframework.config.ConfigurerModule;
import org.axonframework.eventhandling.PropagatingErrorHandler;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

import java.io.IOException;

/** The application of {@link SetBasedValidationTest}: members, and a look-up table of their e-mail addresses. */
@SpringBootApplication
public class Members {

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

    /** The look-up table's handler propagates its failures, so that they fail the command (set-based validation). */
    @Bean
    ConfigurerModule propagateEmailClaimFailures() {
        return configurer -> configurer.eventProcessing().registerListenerInvocationErrorHandler(
                "email-claims", configuration -> PropagatingErrorHandler.instance());
    }
}
