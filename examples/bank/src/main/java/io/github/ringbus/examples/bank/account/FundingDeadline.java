package io.github.ringbus.examples.bank.account;

import org.axonframework.config.Configuration;
import org.axonframework.config.ConfigurationScopeAwareProvider;
import org.axonframework.deadline.DeadlineManager;
import org.axonframework.deadline.SimpleDeadlineManager;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;

import java.time.Duration;
import java.util.concurrent.Executors;

/**
 * An account that receives no deposit within the funding window ({@code bank.funding-window}) after it was opened is
 * flagged as unfunded, by a deadline the account schedules when it opens. The deadline comes back to the account
 * through its repository, which with ringbus runs it on the account's handler thread like a command, and stores
 * the event it applies in PostgreSQL with the commands' events.
 * <p>
 * The deadline manager is Axon's {@link SimpleDeadlineManager} on a scheduled thread pool of its own: it keeps
 * deadlines in memory (a restart forgets them); an application that must not lose them uses a persistent one
 * (Quartz, db-scheduler, JobRunr), which reaches the account the same way.
 */
@org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
public class FundingDeadline {

    /** The name of the deadline. */
    public static final String NAME = "funding-window";

    /** How long a new account may stay without a deposit. */
    public record Window(Duration duration) {
    }

    @Bean
    Window fundingWindow(@Value("${bank.funding-window:PT24H}") Duration window) {
        return new Window(window);
    }

    @Bean
    DeadlineManager deadlineManager(Configuration configuration) {
        return SimpleDeadlineManager.builder()
                                    .scopeAwareProvider(new ConfigurationScopeAwareProvider(configuration))
                                    .scheduledExecutorService(Executors.newScheduledThreadPool(2))
                                    .build();
    }
}
