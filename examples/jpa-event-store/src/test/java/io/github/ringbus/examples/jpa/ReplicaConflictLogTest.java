package io.github.ringbus.examples.jpa;

import io.github.ringbus.examples.jpa.Ledger.Credit;
import io.github.ringbus.examples.jpa.Ledger.OpenLedger;
import io.zonky.test.db.postgres.embedded.EmbeddedPostgres;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Two replicas of the application on one PostgreSQL database, without routing, as docs/faq.md describes them: a
 * command built on a copy of an aggregate the other replica changed is refused by the store's unique key and handled
 * again by ringbus. What the log says of it: ringbus one INFO line per conflict; Hibernate the refused {@code INSERT}
 * at ERROR, unless the one logger setting docs/faq.md gives (read from the page) is set, and then nothing at ERROR.
 */
@ExtendWith(OutputCaptureExtension.class)
class ReplicaConflictLogTest {

    private static EmbeddedPostgres postgres;

    @BeforeAll
    static void startPostgres() throws IOException {
        postgres = EmbeddedPostgres.builder().setRegisterShutdownHook(false).start();
    }

    @AfterAll
    static void stopPostgres() throws IOException {
        postgres.close();
    }

    /** The logger setting docs/faq.md gives for Hibernate's line, as {@code --name=value}. */
    private static String documentedSetting() throws IOException {
        String page = Files.readString(Path.of("../../docs/faq.md"));
        Matcher setting = Pattern.compile("`(logging\\.level\\.[\\w.]+=off)`").matcher(page);
        assertThat(setting.find()).as("docs/faq.md gives a logger setting").isTrue();
        return "--" + setting.group(1);
    }

    private static ConfigurableApplicationContext replica(String... more) {
        List<String> arguments = new ArrayList<>(List.of(
                "--spring.datasource.url=" + postgres.getJdbcUrl("postgres", "postgres"),
                "--spring.datasource.username=postgres", "--spring.datasource.password=postgres",
                "--axon.update-check.disabled=true"));
        arguments.addAll(List.of(more));
        return new SpringApplicationBuilder(LedgerApplication.class).web(WebApplicationType.NONE)
                                                                    .run(arguments.toArray(String[]::new));
    }

    /**
     * Replica a opens the ledger, b credits it (and caches it), a credits it on its stale copy: the store refuses a's
     * append, ringbus reads the ledger again and handles the credit on it.
     *
     * @return what a's credit answered
     */
    private static long conflictOn(String ledger, ConfigurableApplicationContext a, ConfigurableApplicationContext b) {
        a.getBean(CommandGateway.class).sendAndWait(new OpenLedger(ledger));
        b.getBean(CommandGateway.class).sendAndWait(new Credit(ledger, 1));
        return a.getBean(CommandGateway.class).sendAndWait(new Credit(ledger, 10));
    }

    private static List<String> lines(CapturedOutput output, String containing) {
        return output.getAll().lines().filter(line -> line.contains(containing)).toList();
    }

    @Test
    void aConflictHandledAgainIsOneInfoLineOfRingbusAndTheDocumentedSettingKeepsHibernatesErrorOut(
            CapturedOutput output) throws IOException {
        String setting = documentedSetting();
        try (ConfigurableApplicationContext a = replica(setting); ConfigurableApplicationContext b = replica(setting)) {
            long total = conflictOn("quiet", a, b);

            assertThat(total).as("the credit handled again on the ledger as stored").isEqualTo(11L);
        }
        assertThat(lines(output, "another writer appended")).singleElement().satisfies(
                line -> assertThat(line).contains(" INFO ").contains("RefusedBatch").contains("aggregate [quiet]"));
        assertThat(lines(output, " ERROR ")).as("lines at ERROR").isEmpty();
    }

    @Test
    void withoutTheSettingHibernateLogsTheRefusedInsertAtError(CapturedOutput output) {
        try (ConfigurableApplicationContext a = replica(); ConfigurableApplicationContext b = replica()) {
            assertThat(conflictOn("loud", a, b)).isEqualTo(11L);
        }
        assertThat(lines(output, " ERROR ")).anySatisfy(
                line -> assertThat(line).contains("SqlExceptionHelper").contains("duplicate key"));
        assertThat(lines(output, "another writer appended")).hasSize(1);
    }
}
