package io.github.ringbus.examples.setbased;

import io.github.ringbus.RingCommandBus;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.orm.jpa.JpaTransactionManager;
import org.springframework.transaction.PlatformTransactionManager;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * AxonIQ's "set-based validation" on ringbus, with Spring's {@link JpaTransactionManager} on a real PostgreSQL: a
 * subscribing event handler keeps a look-up table of claimed e-mail addresses through JPA, in the command's
 * transaction, and throws on a duplicate (the table's primary key refuses it). As on Axon's own command buses, the
 * command whose address is taken fails and nothing of it is stored: not its event, not its look-up row; every other
 * command, sent at the same time and stored in the same batches, is stored with its row exactly once.
 */
@SpringBootTest(classes = Members.class,
        properties = "axon.eventhandling.processors.email-claims.mode=subscribing")
class SetBasedValidationTest {

    @Autowired
    private CommandGateway gateway;
    @Autowired
    private CommandBus commandBus;
    @Autowired
    private PlatformTransactionManager transactionManager;
    @Autowired
    private JdbcTemplate jdbc;

    @Test
    void aTakenAddressFailsOnlyItsCommandAndNothingOfItIsStoredWhileTheOthersAreStoredOnce() throws Exception {
        assertThat(commandBus).isInstanceOf(RingCommandBus.class);
        assertThat(transactionManager).isInstanceOf(JpaTransactionManager.class);
        gateway.sendAndWait(new Member.Register("m-first", "taken@example.com"));

        List<CompletableFuture<Object>> results = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            String email = i == 15 ? "taken@example.com" : "member-" + i + "@example.com";
            results.add(gateway.send(new Member.Register("m-" + i, email)));
        }

        for (int i = 0; i < 30; i++) {
            if (i == 15) {
                Throwable failure = catchThrowable(() -> results.get(15).get(30, TimeUnit.SECONDS));
                assertThat(failure).isInstanceOf(ExecutionException.class)
                                   .hasStackTraceContaining("email_claim");
            } else {
                assertThat(results.get(i).get(30, TimeUnit.SECONDS)).isEqualTo("m-" + i);
            }
        }
        assertThat(jdbc.queryForObject(
                "SELECT count(*) FROM domain_event_entry WHERE aggregate_identifier = 'm-15'", Long.class)).isZero();
        assertThat(jdbc.queryForObject("SELECT count(*) FROM email_claim WHERE member_id = 'm-15'", Long.class))
                .isZero();
        Map<String, String> claims = jdbc.queryForList("SELECT email, member_id FROM email_claim").stream().collect(
                Collectors.toMap(row -> (String) row.get("email"), row -> (String) row.get("member_id")));
        assertThat(claims).hasSize(30).containsEntry("taken@example.com", "m-first");
        for (int i = 0; i < 30; i++) {
            if (i != 15) {
                assertThat(claims).containsEntry("member-" + i + "@example.com", "m-" + i);
                assertThat(jdbc.queryForObject(
                        "SELECT count(*) FROM domain_event_entry WHERE aggregate_identifier = ?", Long.class, "m-" + i))
                        .isOne();
            }
        }
    }
}
