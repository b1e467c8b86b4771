package io.github.ringbus.benchmarks;

import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.config.Configuration;
import io.github.ringbus.AnnotatedTargetResolver;
import org.axonframework.config.Configurer;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.EventHandler;
import java.util.concurrent.atomic.LongAdder;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.updates.configuration.CommandLineUsagePropertyProvider;

/**
 * The Axon application under test: the {@link Account} aggregate, an event store (Axon's embedded one, or for
 * ringbus its {@code RingEventStore}, the embedded store with append and publication taken apart) on an
 * {@link EventStorage} (in memory unless told otherwise) and one of the {@link BusChoice command buses}, configured the
 * way an Axon user would, started, with {@value #ACCOUNTS} accounts opened.
 */
public final class BankApplication {

    /** How many accounts are opened before the benchmark starts. */
    public static final int ACCOUNTS = 1_000;

    private final BusChoice bus;
    private final Configuration configuration;
    private final long historiesBeforeRun;

    private BankApplication(BusChoice bus, Configuration configuration, long historiesBeforeRun) {
        this.bus = bus;
        this.configuration = configuration;
        this.historiesBeforeRun = historiesBeforeRun;
    }

    /**
     * Configures and starts the application on {@code bus} and opens the accounts through it.
     *
     * @throws IllegalStateException if an account could not be opened
     */
    public static BankApplication start(BusChoice bus) {
        return start(bus, EventStorage.inMemory());
    }

    /**
     * Configures and starts the application on {@code bus}, its events stored in {@code storage}, and opens the
     * accounts through it.
     *
     * @throws IllegalStateException if an account could not be opened
     */
    public static BankApplication start(BusChoice bus, EventStorage storage) {
        return start(bus, storage, 0);
    }

    /**
     * As {@link #start(BusChoice, EventStorage)}, with {@code projections} subscribing projections (Axon's
     * subscribing event processors, each counting the events it sees), which the store stage of ringbus calls inside
     * each batch's transaction and SimpleCommandBus inside each command's.
     */
    public static BankApplication start(BusChoice bus, EventStorage storage, int projections) {
        // Axon 4.13 would otherwise contact AxonIQ's update server from every JVM that starts a configuration.
        System.setProperty(CommandLineUsagePropertyProvider.DISABLED_KEY, "true");
        Configurer configurer = DefaultConfigurer.defaultConfiguration();
        if (projections > 0) {
            configurer.eventProcessing().usingSubscribingEventProcessors();
            for (int i = 0; i < projections; i++) {
                String group = "projection-" + i;
                configurer.eventProcessing().registerEventHandler(c -> new EventsSeen())
                          .assignHandlerInstancesMatching(group, handler -> handler instanceof EventsSeen);
            }
        }
        Configuration configuration = configurer
                // Every bus finds command targets with the same resolver, so that the buses are compared, not the
                // resolvers: Axon's default reflects over the payload class on every command, which in this workload
                // cost SimpleCommandBus about three quarters of its throughput (docs/benchmarks.md, 2026-11-24).
                .registerComponent(CommandTargetResolver.class, c -> new AnnotatedTargetResolver())
                .configureTransactionManager(c -> storage.transactions())
                .configureEventStore(c -> bus.eventStore(storage.engine().get(), c))
                .configureAggregate(bus.accountConfiguration())
                .configureCommandBus(bus::build)
                .start();
        openAccounts(configuration.commandBus());
        return new BankApplication(bus, configuration, Account.historiesStarted());
    }

    /** The identifier of account number {@code index}, from 0 to {@value #ACCOUNTS} - 1. */
    public static String accountId(int index) {
        return "account-" + index;
    }

    /** The bus that the application's commands go through. */
    public CommandBus commandBus() {
        return configuration.commandBus();
    }

    /**
     * How many times since the accounts were opened an account was rebuilt from the event store, rather
     * than found in a cache.
     */
    public long replays() {
        return Account.historiesStarted() - historiesBeforeRun;
    }

    /** Shuts the application (and so its bus) down, and says how many replays the run caused, if any. */
    public void shutdown() {
        long replays = replays();
        configuration.shutdown();
        if (replays > 0) {
            System.out.printf("[%s] %,d accounts were replayed from the event store during the run%n",
                              bus.parameterName(), replays);
        }
    }

    /** A subscribing projection: counts the events it is given (state outside any transaction, as a cache's). */
    static final class EventsSeen {
        private final LongAdder seen = new LongAdder();

        @EventHandler
        public void on(Object event) {
            seen.increment();
        }
    }

    private static void openAccounts(CommandBus commandBus) {
        BatchCompletion completion = new BatchCompletion(TimeUnit.SECONDS.toNanos(60));
        completion.expect(ACCOUNTS);
        for (int i = 0; i < ACCOUNTS; i++) {
            commandBus.dispatch(GenericCommandMessage.asCommandMessage(new Account.OpenAccount(accountId(i))),
                                completion);
        }
        completion.await();
    }
}
