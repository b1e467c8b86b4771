package io.github.ringbus.benchmarks.latency;

import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

import io.github.ringbus.AnnotatedTargetResolver;
import io.github.ringbus.PipelineMonitor;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.StageTimes;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import io.github.ringbus.benchmarks.Account;
import io.github.ringbus.benchmarks.AllInMemoryCache;
import io.github.ringbus.benchmarks.BankApplication;
import io.github.ringbus.benchmarks.DepositBatch;
import io.github.ringbus.benchmarks.RingBusFactory;
import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.updates.configuration.CommandLineUsagePropertyProvider;

/**
 * Where the microseconds of one {@code sendAndWait} round trip go: one thread dispatches a {@link Account.Deposit}
 * to a cached account and waits for it, as {@code RoundTripBenchmark} does, and every round trip is cut into the
 * spans between the moments it passed: the caller's call, the slot's publication, each stage, the callback's call
 * and the caller's wake-up. Each span gets its own histogram (HdrHistogram), so the medians say which hand-off costs
 * what; a span's p99 says which one makes the tail.
 *
 * <pre>
 * java -cp benchmarks.jar io.github.ringbus.benchmarks.latency.RoundTripBreakdown [round trips] [settings ...]
 * </pre>
 * settings: {@code simple} (SimpleCommandBus, total only), {@code compact}, {@code full} (ringbus with that
 * topology), each optionally followed by {@code :adaptive}, {@code :blocking} or {@code :sleeping}; default
 * {@code simple compact full}. Round trips: measured after as many warm-up ones (default 200,000).
 */
public final class RoundTripBreakdown {

    private static final String[] SPANS = {
            "caller -> published", "published -> preloaded", "preloaded -> handled", "handled -> completing",
            "completing -> callback", "callback -> caller awake", "total"};

    private RoundTripBreakdown() {
    }

    public static void main(String[] args) {
        System.setProperty(CommandLineUsagePropertyProvider.DISABLED_KEY, "true");
        int roundTrips = 200_000;
        List<String> settings = new ArrayList<>();
        for (String arg : args) {
            if (arg.chars().allMatch(Character::isDigit)) {
                roundTrips = Integer.parseInt(arg);
            } else {
                settings.add(arg);
            }
        }
        if (settings.isEmpty()) {
            settings.addAll(List.of("simple", "compact", "full"));
        }
        System.out.printf("%-18s %-26s %9s %9s %9s%n", "settings", "span", "p50 us", "p90 us", "p99 us");
        for (String setting : settings) {
            run(setting, roundTrips);
        }
    }

    private static void run(String setting, int roundTrips) {
        Stamps stamps = new Stamps();
        Configuration configuration = configure(setting, stamps);
        try {
            CommandBus bus = configuration.commandBus();
            for (int i = 0; i < BankApplication.ACCOUNTS; i++) {
                FutureCallback<Object, Object> opened = new FutureCallback<>();
                bus.dispatch(asCommandMessage(new Account.OpenAccount(BankApplication.accountId(i))), opened);
                opened.getResult();
            }
            DepositBatch deposits = new DepositBatch(0);
            Histogram[] histograms = new Histogram[SPANS.length];
            for (int i = 0; i < histograms.length; i++) {
                histograms[i] = new Histogram(3);
            }
            long next = 0;
            for (int round = 0; round < 2; round++) {
                boolean measured = round == 1;
                for (int i = 0; i < roundTrips; i++) {
                    StampingCallback callback = new StampingCallback();
                    long start = System.nanoTime();
                    bus.dispatch(asCommandMessage(deposits.deposit(next++)), callback);
                    CommandResultMessage<?> result = callback.getResult();
                    long awake = System.nanoTime();
                    if (result.isExceptional()) {
                        throw new IllegalStateException("A command failed", result.exceptionResult());
                    }
                    if (measured) {
                        long[] at = {start, stamps.dispatched, stamps.preloaded, stamps.handled, stamps.completing,
                                callback.calledAt, awake};
                        boolean staged = at[1] != 0; // SimpleCommandBus has no stages to stamp
                        for (int span = staged ? 0 : SPANS.length - 2; span < SPANS.length - 1; span++) {
                            histograms[span].recordValue(Math.max(0, at[span + 1] - at[span]));
                        }
                        histograms[SPANS.length - 1].recordValue(awake - start);
                    }
                }
            }
            for (int span = 0; span < SPANS.length; span++) {
                Histogram h = histograms[span];
                if (h.getTotalCount() == 0) {
                    continue;
                }
                System.out.printf("%-18s %-26s %9.2f %9.2f %9.2f%n", setting, SPANS[span],
                                  h.getValueAtPercentile(50) / 1000.0, h.getValueAtPercentile(90) / 1000.0,
                                  h.getValueAtPercentile(99) / 1000.0);
            }
        } finally {
            configuration.shutdown();
        }
    }

    private static Configuration configure(String setting, Stamps stamps) {
        String[] parts = setting.split(":");
        boolean simple = parts[0].equals("simple");
        AggregateConfigurer<Account> account = AggregateConfigurer.defaultConfiguration(Account.class);
        return DefaultConfigurer.defaultConfiguration()
                .registerComponent(CommandTargetResolver.class, c -> new AnnotatedTargetResolver())
                .configureEventStore(c -> simple
                        ? EmbeddedEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build()
                        : RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build())
                // As in the benchmarks' BusChoice: SimpleCommandBus's repository gets a cache, ringbus has its own.
                .configureAggregate(simple ? account.configureCache(c -> new AllInMemoryCache()) : account)
                .configureCommandBus(c -> simple
                        ? SimpleCommandBus.builder().build()
                        : RingBusFactory.withMonitor(
                                c.eventStore(), NoTransactionManager.INSTANCE,
                                Topology.valueOf(parts[0].toUpperCase()),
                                parts.length > 1 ? WaitStrategyChoice.valueOf(parts[1].toUpperCase())
                                                 : WaitStrategyChoice.ADAPTIVE,
                                stamps))
                .start();
    }

    /** The stage times of the last completed command, copied while the monitor is called. */
    private static final class Stamps implements PipelineMonitor {
        volatile long dispatched;
        volatile long preloaded;
        volatile long handled;
        volatile long completing;

        @Override
        public boolean timesStages() {
            return true;
        }

        @Override
        public void commandCompleted(String commandName, Throwable failure, StageTimes times) {
            dispatched = times.dispatchedNanos();
            preloaded = times.preloadedNanos();
            handled = times.handledNanos();
            completing = times.completingNanos();
        }
    }

    /** A {@link FutureCallback} that notes when it was called. */
    private static final class StampingCallback extends FutureCallback<Object, Object> {
        volatile long calledAt;

        @Override
        public void onResult(CommandMessage<?> commandMessage, CommandResultMessage<?> commandResultMessage) {
            calledAt = System.nanoTime();
            super.onResult(commandMessage, commandResultMessage);
        }
    }
}
