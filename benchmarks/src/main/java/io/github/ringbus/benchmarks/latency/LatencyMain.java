package io.github.ringbus.benchmarks.latency;

import io.github.ringbus.benchmarks.BankApplication;
import io.github.ringbus.benchmarks.BusChoice;
import io.github.ringbus.benchmarks.DepositBatch;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.HdrHistogram.Histogram;

/**
 * Dispatch-to-callback latency of each command bus at 25%, 50% and 90% of its own peak throughput, with
 * one dispatching thread sending on a fixed schedule (see {@link PacedDispatcher}).
 *
 * <p>For each bus it first measures the peak: one thread dispatching {@link DepositBatch}es as fast as
 * the bus takes them. Each load then runs on a freshly started {@link BankApplication} (so every load
 * starts with the same event store), is warmed up for two seconds, and measured.
 *
 * <pre>
 * java -cp benchmarks.jar io.github.ringbus.benchmarks.latency.LatencyMain
 *      [--seconds N] [--peak-seconds N] [bus ...]
 * </pre>
 * {@code --seconds}: measured seconds per load (default 10); {@code --peak-seconds}: warm-up and then
 * measurement seconds of the peak (default 5); buses by their benchmark names (default all).
 */
public final class LatencyMain {

    private static final double[] LOADS = {0.25, 0.50, 0.90};
    private static final Duration LOAD_WARMUP = Duration.ofSeconds(2);
    private static final String ROW = "%-22s %5s %12s %12s %10s %10s %10s %10s%n";

    private LatencyMain() {
    }

    public static void main(String[] args) {
        Duration measurement = Duration.ofSeconds(10);
        Duration peakMeasurement = Duration.ofSeconds(5);
        List<BusChoice> buses = new ArrayList<>();
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--seconds" -> measurement = Duration.ofSeconds(Long.parseLong(args[++i]));
                case "--peak-seconds" -> peakMeasurement = Duration.ofSeconds(Long.parseLong(args[++i]));
                default -> buses.add(BusChoice.named(args[i]));
            }
        }
        if (buses.isEmpty()) {
            buses.addAll(List.of(BusChoice.values()));
        }

        System.out.printf(ROW, "bus", "load", "offered/s", "achieved/s", "p50 us", "p99 us", "p99.9 us", "max us");
        for (BusChoice bus : buses) {
            double peak = peakThroughput(bus, peakMeasurement);
            System.out.printf(ROW, bus.parameterName(), "peak", "", count(peak), "", "", "", "");
            for (double load : LOADS) {
                double offered = load * peak;
                BankApplication application = BankApplication.start(bus);
                try {
                    PacedDispatcher dispatcher = new PacedDispatcher(application.commandBus(), offered);
                    dispatcher.run(LOAD_WARMUP);
                    long start = System.nanoTime();
                    Histogram latencies = dispatcher.run(measurement);
                    double achieved = latencies.getTotalCount() * 1e9 / (System.nanoTime() - start);
                    System.out.printf(ROW, bus.parameterName(), Math.round(load * 100) + "%", count(offered),
                                      count(achieved), micros(latencies.getValueAtPercentile(50)),
                                      micros(latencies.getValueAtPercentile(99)),
                                      micros(latencies.getValueAtPercentile(99.9)),
                                      micros(latencies.getMaxValue()));
                } finally {
                    application.shutdown();
                }
            }
        }
    }

    /** Commands per second that one thread gets through {@code bus} in batches, after as long a warm-up. */
    private static double peakThroughput(BusChoice bus, Duration measurement) {
        BankApplication application = BankApplication.start(bus);
        try {
            DepositBatch batch = new DepositBatch(0);
            dispatchFor(batch, application, measurement);
            long start = System.nanoTime();
            long batches = dispatchFor(batch, application, measurement);
            return batches * DepositBatch.SIZE * 1e9 / (System.nanoTime() - start);
        } finally {
            application.shutdown();
        }
    }

    private static long dispatchFor(DepositBatch batch, BankApplication application, Duration duration) {
        long end = System.nanoTime() + duration.toNanos();
        long batches = 0;
        while (System.nanoTime() < end) {
            batch.dispatchTo(application.commandBus());
            batches++;
        }
        return batches;
    }

    private static String count(double perSecond) {
        return String.format("%,.0f", perSecond);
    }

    private static String micros(long nanos) {
        return String.format("%,.1f", nanos / 1_000.0);
    }
}
