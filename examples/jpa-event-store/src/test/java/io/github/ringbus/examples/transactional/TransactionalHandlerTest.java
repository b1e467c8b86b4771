package io.github.ringbus.examples.transactional;

import io.github.ringbus.examples.RingAndSimpleApplications;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Spring {@code @Transactional} external command handler on ringbus as on Axon's {@code SimpleCommandBus}, each in
 * an application of its own on a real PostgreSQL with Spring's {@code JpaTransactionManager}: the handler's
 * transaction is the command's. A publication whose cart refuses it fails, although the handler's exception handler
 * answered it, since the failure marked the command's transaction rollback-only: nothing of it is stored, neither the
 * handler's row nor an event. A publication that succeeds stores its row and its event together.
 */
class TransactionalHandlerTest {

    private static RingAndSimpleApplications applications;
    private static ConfigurableApplicationContext ring;
    private static ConfigurableApplicationContext simple;

    @BeforeAll
    static void startBothApplications() {
        applications = RingAndSimpleApplications.start(Shop.class);
        ring = applications.ring;
        simple = applications.simple;
    }

    @AfterAll
    static void stopBothApplications() {
        if (applications != null) {
            applications.close();
        }
    }

    private record Run(List<Object> outcomes, List<String> stored, long rows) {
    }

    /** Sends the commands one after the other, then reads what the application's database holds for the cart. */
    private static Run run(ConfigurableApplicationContext application, String cartId, Object... commands) {
        CommandGateway gateway = application.getBean(CommandGateway.class);
        List<Object> outcomes = new ArrayList<>();
        for (Object command : commands) {
            CompletableFuture<Object> sent = gateway.send(command);
            try {
                outcomes.add(sent.get(30, TimeUnit.SECONDS));
            } catch (Exception failure) {
                Throwable cause = failure.getCause() == null ? failure : failure.getCause();
                outcomes.add(cause.getClass());
            }
        }
        JdbcTemplate jdbc = application.getBean(JdbcTemplate.class);
        List<String> stored = jdbc.queryForList(
                "SELECT payload_type FROM domain_event_entry WHERE aggregate_identifier = ? ORDER BY sequence_number",
                String.class, cartId).stream().map(type -> type.substring(type.lastIndexOf('$') + 1)).toList();
        Long rows = jdbc.queryForObject("SELECT count(*) FROM published_cart WHERE cart_id = ?", Long.class, cartId);
        return new Run(outcomes, stored, rows);
    }

    @Test
    void aPublicationTheCartRefusesFailsWithNothingStoredThoughTheExceptionHandlerAnsweredIt() {
        Object[] commands = {new Cart.Create("never-submitted"), new Cart.Publish("never-submitted")};

        Run onSimpleCommandBus = run(simple, "never-submitted", commands);
        Run onRingbus = run(ring, "never-submitted", commands);

        assertThat(onSimpleCommandBus.outcomes().get(1)).as("on SimpleCommandBus")
                .isEqualTo(org.springframework.transaction.UnexpectedRollbackException.class);
        assertThat(onSimpleCommandBus.stored()).containsExactly("Created");
        assertThat(onSimpleCommandBus.rows()).isZero();
        assertThat(onRingbus).isEqualTo(onSimpleCommandBus);
    }

    @Test
    void aPublicationIsStoredWithTheHandlersRowAndASecondOneFailsWithNothingStored() {
        Object[] commands = {new Cart.Create("submitted"), new Cart.Submit("submitted"),
                new Cart.Publish("submitted"), new Cart.Publish("submitted")};

        Run onSimpleCommandBus = run(simple, "submitted", commands);
        Run onRingbus = run(ring, "submitted", commands);

        assertThat(onSimpleCommandBus.stored()).containsExactly("Created", "Submitted", "Published");
        assertThat(onSimpleCommandBus.rows()).isOne();
        assertThat(onRingbus).isEqualTo(onSimpleCommandBus);
    }
}
