package io.github.ringbus.examples.axonserver;

import org.axonframework.eventhandling.EventHandler;
import org.springframework.stereotype.Component;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A read model of every account's balance, built by a tracking event processor (the starter's default) that reads
 * the events from Axon Server, in the order it stored them.
 */
@Component
public class Balances {

    private final Map<String, Long> balances = new ConcurrentHashMap<>();

    @EventHandler
    void on(AccountMessages.AccountOpened event) {
        balances.put(event.getAccountId(), 0L);
    }

    @EventHandler
    void on(AccountMessages.Deposited event) {
        balances.merge(event.getAccountId(), event.getAmount(), Long::sum);
    }

    @EventHandler
    void on(AccountMessages.Withdrawn event) {
        balances.merge(event.getAccountId(), -event.getAmount(), Long::sum);
    }

    /** @return the account's balance as far as the processor has read, or null before it read its opening */
    public Long balanceOf(String accountId) {
        return balances.get(accountId);
    }
}
