package io.github.ringbus.examples.jpa;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.examples.jpa.Ledger.Credit;
import io.github.ringbus.examples.jpa.Ledger.OpenLedger;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/spring-boot.md opens with an {@code application.properties} for PostgreSQL that a new application can copy.
 * Here an application starts with that file exactly as the page shows it (and no other configuration file), its
 * connection settings pointed at a real PostgreSQL server, stores events, restarts, and reads them back.
 */
class DocumentedPropertiesTest {

    private static String documentedProperties() throws IOException {
        String page = Files.readString(Path.of("../../docs/spring-boot.md"));
        Matcher block = Pattern.compile("```properties\\n(.*?)```", Pattern.DOTALL).matcher(page);
        assertThat(block.find()).as("docs/spring-boot.md shows an application.properties").isTrue();
        return block.group(1);
    }

    private static ConfigurableApplicationContext start(Path properties, EmbeddedPostgres postgres) {
        return new SpringApplicationBuilder(LedgerApplication.class)
                .web(WebApplicationType.NONE)
                // The documented file alone (not the example's own application.yml), and the test server's address in
                // place of the documented one.
                .run("--spring.config.location=file:" + properties,
                     "--spring.datasource.url=" + postgres.getJdbcUrl("postgres", "postgres"),
                     "--spring.datasource.username=postgres",
                     "--spring.datasource.password=postgres",
                     "--axon.update-check.disabled=true");
    }

    @Test
    void anApplicationStartsOnTheDocumentedPropertiesStoresEventsAndReadsThemBackAfterARestart(@TempDir Path dir)
            throws Exception {
        String documented = documentedProperties();
        assertThat(documented).contains("spring.jpa.hibernate.ddl-auto=update")
                              .contains("axon.serializer.events=jackson")
                              .contains("axon.axonserver.enabled=false");
        Path properties = dir.resolve("application.properties");
        Files.writeString(properties, documented);

        try (EmbeddedPostgres postgres = EmbeddedPostgres.builder().setRegisterShutdownHook(false).start()) {
            try (ConfigurableApplicationContext first = start(properties, postgres)) {
                assertThat(first.getBean(CommandBus.class)).isInstanceOf(RingCommandBus.class);
                CommandGateway gateway = first.getBean(CommandGateway.class);
                gateway.sendAndWait(new OpenLedger("documented"));
                for (int i = 0; i < 10; i++) {
                    gateway.sendAndWait(new Credit("documented", 10));
                }
            }
            try (ConfigurableApplicationContext restarted = start(properties, postgres)) {
                long total = restarted.getBean(CommandGateway.class).sendAndWait(new Credit("documented", 1));

                assertThat(total).as("the ten credits before the restart, read back, and this one").isEqualTo(101L);
            }
        }
    }
}
