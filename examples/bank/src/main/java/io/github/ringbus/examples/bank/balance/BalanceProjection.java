package io.github.ringbus.examples.bank.balance;

import io.github.ringbus.examples.bank.account.AccountEvents.AccountOpened;
import io.github.ringbus.examples.bank.account.AccountEvents.MoneyDeposited;
import io.github.ringbus.examples.bank.account.AccountEvents.MoneyWithdrawn;
import org.axonframework.config.ProcessingGroup;
import org.axonframework.eventhandling.EventHandler;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.util.List;
import java.util.Optional;

/**
 * The read side: each account's owner and balance in the {@code account_balance} table, kept up to date by a tracking
 * event processor that reads the event store (its position is kept in Axon's token table, in the same transaction).
 */
@Component
@ProcessingGroup("balances")
public class BalanceProjection {

    /** One row of the read model. */
    public record AccountBalance(String accountId, String owner, long balance) {
    }

    private final JdbcTemplate jdbc;

    public BalanceProjection(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @EventHandler
    void on(AccountOpened event) {
        jdbc.update("INSERT INTO account_balance (account_id, owner, balance) VALUES (?, ?, 0) "
                            + "ON CONFLICT (account_id) DO NOTHING", event.accountId(), event.owner());
    }

    @EventHandler
    void on(MoneyDeposited event) {
        jdbc.update("UPDATE account_balance SET balance = balance + ? WHERE account_id = ?",
                    event.amount(), event.accountId());
    }

    @EventHandler
    void on(MoneyWithdrawn event) {
        jdbc.update("UPDATE account_balance SET balance = balance - ? WHERE account_id = ?",
                    event.amount(), event.accountId());
    }

    /**
     * @param accountId an account
     * @return its owner and balance as far as the projection has got, or empty if it does not know the account yet
     */
    public Optional<AccountBalance> find(String accountId) {
        List<AccountBalance> rows = jdbc.query(
                "SELECT account_id, owner, balance FROM account_balance WHERE account_id = ?",
                (rs, i) -> new AccountBalance(rs.getString(1), rs.getString(2), rs.getLong(3)), accountId);
        return rows.stream().findFirst();
    }
}
