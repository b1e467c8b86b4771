package io.github.ringbus.examples.bank;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Bank accounts on Axon Framework, with ringbus as the command bus: nothing in this application mentions ringbus
 * but its dependency (pom.xml) and its {@code ringbus.*} properties (application.yml).
 * <p>
 * Events are stored in PostgreSQL by Axon's JDBC storage engine: an embedded server by default
 * ({@link EmbeddedPostgresConfiguration}), or a real one given by {@code spring.datasource.url}.
 */
@SpringBootApplication
public class BankApplication {

    public static void main(String[] args) {
        SpringApplication.run(BankApplication.class, args);
    }
}
