package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.StageThreadTimes;

import java.lang.ref.WeakReference;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongSupplier;

/**
 * The stage threads' busy shares for {@link RingbusMetrics}' gauges: each thread's CPU time (and time in the store)
 * over the wall time since the last sample, a new sample taken when a gauge is read at least a second after the last
 * one (a scrape every 15 s gives the share over those 15 s; reads closer together give the last share again). The
 * first read gives the share since the thread began to run, so that no scrape reads NaN. A share is always in
 * [0, 1]: both times and the wall time come from one reading ({@link StageThreadTimes#runningNanos()}), the attempt in
 * progress counted in the store's time, and a thread that is not running (not started yet, or ended) reads 0.
 * The CPU gauges are only registered where the JVM measures threads' CPU time. Called by whichever thread reads the
 * meters; synchronized, as reads are rare and never on the ring's threads.
 */
final class ThreadShares {

    /** The shortest window a share is taken over: shorter ones would mostly show the clocks' granularity. */
    static final long MIN_WINDOW_NANOS = 1_000_000_000L;

    /** Weakly, as the ring's other gauges hold it: the registry must not keep a bus that was let go. */
    private final WeakReference<RingCommandBus> bus;
    private final LongSupplier clock;
    /** Each running thread's times at the last sample. */
    private final Map<String, StageThreadTimes> last = new HashMap<>();
    /** Each thread's shares (busy, in store) over the last window. */
    private final Map<String, double[]> shares = new HashMap<>();
    /** Each thread's CPU and store seconds when last read running: what its counters keep once it has ended. */
    private final Map<String, double[]> totals = new HashMap<>();
    private long lastSampleNanos;
    private boolean sampled;

    ThreadShares(RingCommandBus bus) {
        this(bus, System::nanoTime);
    }

    /**
     * @param bus   the ring whose threads are measured
     * @param clock when to take a new sample (at least {@link #MIN_WINDOW_NANOS} after the last); the shares' windows
     *              come from the threads' own times
     */
    ThreadShares(RingCommandBus bus, LongSupplier clock) {
        this.bus = new WeakReference<>(bus);
        this.clock = clock;
    }

    /** @return the thread's CPU time over wall time in the last window (1.0: a whole core), in [0, 1] */
    synchronized double busy(String thread) {
        sample();
        double[] share = shares.get(thread);
        return share == null ? 0 : share[0];
    }

    /** @return the thread's time in the store's transactions over wall time in the last window, in [0, 1] */
    synchronized double inStore(String thread) {
        sample();
        double[] share = shares.get(thread);
        return share == null ? 0 : share[1];
    }

    /** @return the thread's CPU time so far in seconds (0 before it started; after it ended, what it used) */
    synchronized double cpuSeconds(String thread) {
        return total(thread)[0];
    }

    /** @return the thread's time in the store's transactions so far, in seconds */
    synchronized double storeSeconds(String thread) {
        return total(thread)[1];
    }

    private double[] total(String thread) {
        for (StageThreadTimes times : threads()) {
            if (times.thread().equals(thread) && running(times)) {
                totals.put(thread, new double[] {times.cpuNanos() / 1e9, times.inStoreNanos() / 1e9});
            }
        }
        return totals.getOrDefault(thread, new double[2]);
    }

    private List<StageThreadTimes> threads() {
        RingCommandBus ring = bus.get();
        return ring == null ? List.of() : ring.stageThreadTimes();
    }

    private static boolean running(StageThreadTimes times) {
        return times.cpuNanos() >= 0 && times.runningNanos() > 0;
    }

    private void sample() {
        long now = clock.getAsLong();
        if (sampled && now - lastSampleNanos < MIN_WINDOW_NANOS) {
            return;
        }
        for (StageThreadTimes times : threads()) {
            String thread = times.thread();
            if (!running(times)) {
                last.remove(thread);
                shares.remove(thread);
                continue;
            }
            StageThreadTimes before = last.put(thread, times);
            boolean since = before != null && times.runningNanos() > before.runningNanos();
            // Without an earlier sample of this run: the share since the thread began to run.
            long window = since ? times.runningNanos() - before.runningNanos() : times.runningNanos();
            long cpu = since ? times.cpuNanos() - before.cpuNanos() : times.cpuNanos();
            long inStore = since ? times.inStoreNanos() - before.inStoreNanos() : times.inStoreNanos();
            shares.put(thread, new double[] {share(cpu, window), share(inStore, window)});
        }
        lastSampleNanos = now;
        sampled = true;
    }

    /**
     * The part of a window a time took. Clamped to [0, 1]: the CPU time and the wall time are read microseconds apart
     * on different clocks, so a thread busy the whole window may read a hair above 1.
     */
    private static double share(long nanos, long window) {
        return Math.min(1.0, Math.max(0.0, (double) nanos / window));
    }
}
