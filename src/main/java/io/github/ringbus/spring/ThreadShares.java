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
 * one (a scrape every 15 s gives the share over those 15 s; reads closer together give the last share again). Called by
 * whichever thread reads the meters; synchronized, as reads are rare and never on the ring's threads.
 */
final class ThreadShares {

    /** The shortest window a share is taken over: shorter ones would mostly show the clocks' granularity. */
    static final long MIN_WINDOW_NANOS = 1_000_000_000L;

    /** Weakly, as the ring's other gauges hold it: the registry must not keep a bus that was let go. */
    private final WeakReference<RingCommandBus> bus;
    private final LongSupplier clock;
    private final Map<String, StageThreadTimes> last = new HashMap<>();
    private final Map<String, double[]> shares = new HashMap<>();
    private long lastSampleNanos;
    private boolean sampled;

    ThreadShares(RingCommandBus bus) {
        this(bus, System::nanoTime);
    }

    ThreadShares(RingCommandBus bus, LongSupplier clock) {
        this.bus = new WeakReference<>(bus);
        this.clock = clock;
    }

    /** @return the thread's CPU time over wall time in the last window (1.0: a whole core), or NaN before one */
    synchronized double busy(String thread) {
        sample();
        double[] share = shares.get(thread);
        return share == null ? Double.NaN : share[0];
    }

    /** @return the thread's time in the store's transactions over wall time in the last window, or NaN before one */
    synchronized double inStore(String thread) {
        sample();
        double[] share = shares.get(thread);
        return share == null ? Double.NaN : share[1];
    }

    /** @return the thread's CPU time so far in seconds, or NaN when it cannot be measured (not running) */
    double cpuSeconds(String thread) {
        StageThreadTimes times = now(thread);
        return times == null || times.cpuNanos() < 0 ? Double.NaN : times.cpuNanos() / 1e9;
    }

    /** @return the thread's time in the store's transactions so far, in seconds */
    double storeSeconds(String thread) {
        StageThreadTimes times = now(thread);
        return times == null ? Double.NaN : times.inStoreNanos() / 1e9;
    }

    private List<StageThreadTimes> threads() {
        RingCommandBus ring = bus.get();
        return ring == null ? List.of() : ring.stageThreadTimes();
    }

    private StageThreadTimes now(String thread) {
        for (StageThreadTimes times : threads()) {
            if (times.thread().equals(thread)) {
                return times;
            }
        }
        return null;
    }

    private void sample() {
        long now = clock.getAsLong();
        if (sampled && now - lastSampleNanos < MIN_WINDOW_NANOS) {
            return;
        }
        long window = now - lastSampleNanos;
        for (StageThreadTimes times : threads()) {
            StageThreadTimes before = last.put(times.thread(), times);
            if (!sampled || before == null || before.cpuNanos() < 0 || times.cpuNanos() < 0) {
                shares.remove(times.thread());
                continue;
            }
            shares.put(times.thread(), new double[] {
                    (double) (times.cpuNanos() - before.cpuNanos()) / window,
                    (double) (times.inStoreNanos() - before.inStoreNanos()) / window});
        }
        lastSampleNanos = now;
        sampled = true;
    }
}
