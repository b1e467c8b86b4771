package io.github.ringbus.benchmarks.report;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.StageThreadTimes;
import io.github.ringbus.benchmarks.RingBusFactory;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.openjdk.jmh.infra.BenchmarkParams;
import org.openjdk.jmh.infra.IterationParams;
import org.openjdk.jmh.profile.InternalProfiler;
import org.openjdk.jmh.results.AggregationPolicy;
import org.openjdk.jmh.results.IterationResult;
import org.openjdk.jmh.results.Result;
import org.openjdk.jmh.results.ScalarResult;

/**
 * A JMH profiler ({@code -prof io.github.ringbus.benchmarks.report.Utilization}) that says, for each iteration, what
 * kept the machine busy: so that a reader of a figure sees what limits it (a stage thread at 100 % of a core, or a
 * store thread waiting on the server while cores idle). Secondary results, each in percent:
 * <ul>
 *     <li>{@code util.machine}: the machine's busy share, all cores together ({@code /proc/stat}: everything but idle
 *     and I/O wait), where the database server's work shows too;</li>
 *     <li>{@code util.jvm}: this JVM's CPU time over wall time, in percent of one core;</li>
 *     <li>{@code util.thread.NAME}: a thread's CPU time over wall time, in percent of one core, for every thread
 *     busy at least 2 % of a core: ringbus's stage threads by name, JMH's dispatching threads together as
 *     {@code dispatchers} (their sum), other threads summed by their name without numbers (ringbus's read-ahead
 *     threads as one);</li>
 *     <li>{@code util.in-store.NAME}: a ringbus store thread's time inside the store's transactions over wall time
 *     (appending and committing: on a database mostly waiting for the server).</li>
 * </ul>
 * Off Linux (no {@code /proc/stat}) the machine's share is left out. Measures the iteration's whole wall time, set-up
 * of the iteration excluded; it costs one pass over the JVM's threads per iteration.
 */
public final class Utilization implements InternalProfiler {

    private static final Path PROC_STAT = Path.of("/proc/stat");
    private static final double MIN_SHARE = 2.0;
    /** The stage threads' names (StagePlan's), kept whole; other threads lose their numbers and are summed. */
    private static final java.util.regex.Pattern STAGES = java.util.regex.Pattern.compile(
            "-(preload|preload-handle|handle-\\d+|store|store-complete|store-complete-\\d+|publish|complete)$");

    /**
     * The window a benchmark marked with {@link #iterationBegins()} and {@link #iterationEnds()}; null where it marks
     * none. Written by the benchmark's thread that runs its iteration set-up and tear-down, read by JMH's thread after
     * the iteration (which starts after the tear-down returned).
     */
    private static volatile Snapshot markedStart;
    private static volatile Snapshot markedEnd;
    /** What the benchmark counted itself in the marked window ({@link #alsoReport}), reported with the shares. */
    private static final Map<String, Double> reported = new java.util.concurrent.ConcurrentHashMap<>();

    private Snapshot start;

    /**
     * Marks the start of an iteration's measurement, from a benchmark's {@code @Setup(Level.Iteration)}: needed where
     * the benchmark's trial tear-down stops the bus before the profiler's end of the last iteration (JMH runs it
     * first), which would take the stage threads away before they are measured.
     */
    public static void iterationBegins() {
        markedEnd = null;
        reported.clear();
        markedStart = Snapshot.take();
    }

    /** Marks the end of an iteration's measurement, from a benchmark's {@code @TearDown(Level.Iteration)}. */
    public static void iterationEnds() {
        if (markedStart != null) {
            markedEnd = Snapshot.take();
        }
    }

    /**
     * A figure the benchmark measured in this iteration (the events the server stored per second, say), reported as
     * {@code label} beside the shares, so that the report can check the score against it.
     */
    public static void alsoReport(String label, double value) {
        reported.put(label, value);
    }

    @Override
    public String getDescription() {
        return "ringbus: the machine's, the JVM's and each busy thread's share of the iteration (util.*)";
    }

    @Override
    public void beforeIteration(BenchmarkParams benchmarkParams, IterationParams iterationParams) {
        markedStart = null;
        markedEnd = null;
        reported.clear();
        start = Snapshot.take();
    }

    @Override
    public Collection<? extends Result> afterIteration(BenchmarkParams benchmarkParams,
                                                       IterationParams iterationParams, IterationResult result) {
        Snapshot from = start;
        Snapshot to;
        if (markedStart != null && markedEnd != null) {
            from = markedStart;
            to = markedEnd;
        } else {
            to = Snapshot.take();
        }
        List<Result> results = from.sharesUntil(to);
        reported.forEach((label, value) -> results.add(new ScalarResult(label, value, "", AggregationPolicy.AVG)));
        return results;
    }

    /** What the machine, the JVM, each of its threads and ringbus's store threads had used at one moment. */
    private record Snapshot(long nanos, long[] machine, long process, Map<Long, String> names, Map<Long, Long> threads,
                            Map<String, Long> inStore) {

        static Snapshot take() {
            ThreadMXBean mx = ManagementFactory.getThreadMXBean();
            Map<Long, Long> cpu = new HashMap<>();
            Map<Long, String> names = new HashMap<>();
            if (mx.isThreadCpuTimeSupported()) {
                for (ThreadInfo info : mx.getThreadInfo(mx.getAllThreadIds())) {
                    if (info == null) {
                        continue;
                    }
                    long nanos = mx.getThreadCpuTime(info.getThreadId());
                    if (nanos >= 0) {
                        cpu.put(info.getThreadId(), nanos);
                        names.put(info.getThreadId(), info.getThreadName());
                    }
                }
            }
            return new Snapshot(System.nanoTime(), readMachine(), processCpu(), names, cpu, readInStore());
        }

        List<Result> sharesUntil(Snapshot end) {
            long wall = end.nanos - nanos;
            List<Result> results = new ArrayList<>();
            if (machine != null && end.machine != null) {
                long busy = end.machine[0] - machine[0];
                long total = end.machine[1] - machine[1];
                if (total > 0) {
                    results.add(share("util.machine", 100.0 * busy / total));
                }
            }
            results.add(share("util.jvm", 100.0 * (end.process - process) / wall));
            // A thread that started during the window used all its CPU time in it; one that ended is not counted.
            Map<String, Long> byGroup = new HashMap<>();
            end.threads.forEach((id, nanos) -> byGroup.merge(group(end.names.get(id)),
                                                             nanos - threads.getOrDefault(id, 0L), Long::sum));
            byGroup.forEach((group, used) -> {
                double percent = 100.0 * used / wall;
                if (percent >= MIN_SHARE) {
                    results.add(share("util.thread." + group, percent));
                }
            });
            end.inStore.forEach((thread, nanos) -> results.add(
                    share("util.in-store." + thread, 100.0 * (nanos - inStore.getOrDefault(thread, 0L)) / wall)));
            return results;
        }
    }

    private static ScalarResult share(String label, double percent) {
        return new ScalarResult(label, percent, "%", AggregationPolicy.AVG);
    }

    /** ringbus's stage threads keep their names; JMH's workers are the dispatchers; others lose their numbers. */
    static String group(String threadName) {
        if (threadName.matches("ringbus-[a-z-]+(-\\d+)?") && STAGES.matcher(threadName).find()) {
            return threadName; // a stage thread: each handler thread and store shard by its own name
        }
        if (threadName.contains("jmh-worker")) {
            return "dispatchers";
        }
        return threadName.replaceAll("[0-9]+", "#");
    }

    private static Map<String, Long> readInStore() {
        Map<String, Long> inStore = new HashMap<>();
        for (RingCommandBus bus : RingBusFactory.running()) {
            for (StageThreadTimes thread : bus.stageThreadTimes()) {
                if (thread.stores()) {
                    inStore.merge(thread.thread(), thread.inStoreNanos(), Long::sum);
                }
            }
        }
        return inStore;
    }

    private static long processCpu() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    /** The machine's busy and total jiffies from {@code /proc/stat}'s first line, or null off Linux. */
    private static long[] readMachine() {
        try {
            String line = Files.readAllLines(PROC_STAT).get(0);
            String[] fields = line.trim().split("\\s+");
            long total = 0;
            long idle = 0;
            // cpu user nice system idle iowait irq softirq steal [guest guest_nice: counted in user already]
            for (int i = 1; i < Math.min(fields.length, 9); i++) {
                long value = Long.parseLong(fields[i]);
                total += value;
                if (i == 4 || i == 5) {
                    idle += value;
                }
            }
            return new long[] {total - idle, total};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }
}
