package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.common.caching.WeakReferenceCache;
import org.axonframework.common.lock.LockFactory;
import org.axonframework.common.lock.NullLockFactory;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * An aggregate's own settings in a plain Axon configuration ({@link AggregateConfigurer}'s {@code configure...}) are
 * honoured by the ring, replaced by ringbus's own with a warning (a cache), or refused at start-up with a message
 * naming them (a lock factory ringbus cannot keep the promise of): never silently replaced.
 */
class AggregateSettingsTest {

    /** Finds a command's target in its meta data, key "account": nothing in the payload says it. */
    static final CommandTargetResolver BY_META_DATA =
            command -> new VersionedAggregateIdentifier((String) command.getMetaData().get("account"), null);

    private Configuration configuration;

    @AfterEach
    void shutDown() {
        if (configuration != null) {
            configuration.shutdown();
        }
    }

    private Configuration start(AggregateConfigurer<Account> account) {
        configuration = DefaultConfigurer.defaultConfiguration()
                                         .configureEventStore(c -> RingEventStore.builder()
                                                                                 .storageEngine(new InMemoryEventStorageEngine())
                                                                                 .build())
                                         .configureAggregate(account)
                                         .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore())
                                                                                 .build())
                                         .start();
        return configuration;
    }

    private static AggregateConfigurer<Account> account() {
        return AggregateConfigurer.defaultConfiguration(Account.class);
    }

    @Test
    void everyAxonSettingRingbusReadsIsWhereItLooksForIt() {
        assertThat(AxonInternals.unavailable()).isEmpty();
    }

    @Test
    void anAggregatesOwnCommandTargetResolverFindsTheTargetTheRingPreloads() {
        start(account().configureCommandTargetResolver(c -> BY_META_DATA));

        configuration.commandGateway().sendAndWait(
                new GenericCommandMessage<>(new Open("a"), Map.of("account", "a")));
        Object balance = configuration.commandGateway().sendAndWait(
                new GenericCommandMessage<>(new Deposit("not-the-target", 5), Map.of("account", "a")));

        assertThat(balance).isEqualTo(5L);
        assertThat(configuration.repository(Account.class)).isInstanceOf(RingRepository.class);
    }

    /**
     * As AxonIQ's giftcard demo does: the application starts, its commands run through the ring, and the configured
     * cache is left alone (ringbus's own cache holds ring aggregates).
     */
    @Test
    void aCacheConfiguredForARingAggregateDoesNotStopStartUpAndIsNotUsed() {
        WeakReferenceCache configured = new WeakReferenceCache();
        start(account().configureCache(c -> configured));

        configuration.commandGateway().sendAndWait(new Open("a"));
        Object balance = configuration.commandGateway().sendAndWait(new Deposit("a", 5));

        assertThat(balance).isEqualTo(5L);
        assertThat(configuration.repository(Account.class)).isInstanceOf(RingRepository.class);
        assertThat(configured.containsKey("a")).as("the configured cache holds the aggregate").isFalse();
    }

    @Test
    void aLockFactoryOfAxonsOwnIsAcceptedAsRedundant() {
        start(account().configureLockFactory(c -> NullLockFactory.INSTANCE));

        configuration.commandGateway().sendAndWait(new Open("a"));

        assertThat(configuration.repository(Account.class)).isInstanceOf(RingRepository.class);
    }

    @Test
    void aLockFactoryOfAnotherKindFailsStartUpNamingTheSetting() {
        LockFactory distributed = identifier -> {
            throw new UnsupportedOperationException("a lock across processes");
        };

        assertThatThrownBy(() -> start(account().configureLockFactory(c -> distributed)))
                .rootCause()
                .hasMessageContaining("Aggregate [" + Account.class.getName() + "] is configured with lock factory")
                .hasMessageContaining("configureLockFactory");
    }

    @Test
    void aRepositoryConfiguredForTheAggregateIsKeptAndItsCommandsStillRun() {
        start(account().configureRepository(c -> EventSourcingRepository.builder(Account.class)
                                                                         .eventStore(c.eventStore())
                                                                         .lockFactory(NullLockFactory.INSTANCE)
                                                                         .build()));

        configuration.commandGateway().sendAndWait(new Open("a"));
        configuration.commandGateway().sendAndWait(new Deposit("a", 7));

        assertThat(configuration.repository(Account.class)).isInstanceOf(EventSourcingRepository.class);
        assertThat(configuration.eventStore().readEvents("a").asStream().map(EventMessage::getPayload)
                                .collect(Collectors.toList())).hasSize(2);
    }

    @Test
    void anAggregateWithoutSettingsOfItsOwnRunsOnTheRing() {
        start(account());

        configuration.commandGateway().sendAndWait(new Open("a"));

        assertThat(configuration.repository(Account.class)).isInstanceOf(RingRepository.class);
        assertThat(AggregateConfigurerSettings.hasOwnRepository(account())).isFalse();
    }
}
