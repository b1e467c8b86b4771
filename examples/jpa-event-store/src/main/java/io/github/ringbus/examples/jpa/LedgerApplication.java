package io.github.ringbus.examples.jpa;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * Ledgers on Axon's JPA event store. Spring Boot configures the {@code DataSource} and JPA from
 * {@code spring.datasource.*}; Axon finds the {@code EntityManagerFactory} and stores events with its
 * {@code JpaEventStorageEngine}, in transactions of Spring's {@code JpaTransactionManager}; ringbus, found on the class
 * path, runs the commands and appends each batch of them in one of those transactions.
 */
@SpringBootApplication
public class LedgerApplication {

    public static void main(String[] args) {
        SpringApplication.run(LedgerApplication.class, args);
    }
}
