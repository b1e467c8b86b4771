package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.PipelineMonitor;
import io.github.ringbus.StageThreadTimes;
import io.github.ringbus.StageTimes;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.TimeUnit;

/**
 * Records a {@link RingCommandBus}'s pipeline in Micrometer; every meter carries the tag {@code bus} (the bus's name,
 * in Spring its bean name):
 * <table>
 *     <caption>Meters</caption>
 *     <tr><th>name</th><th>type</th><th>what</th></tr>
 *     <tr><td>{@value #COMMANDS}</td><td>counter</td><td>completed commands, failed or not (its rate is commands/s)</td></tr>
 *     <tr><td>{@value #FAILURES}</td><td>counter</td><td>failed commands, tagged {@code exception} (simple class name)</td></tr>
 *     <tr><td>{@value #REMAINING}</td><td>gauge</td><td>free slots of the ring now</td></tr>
 *     <tr><td>{@value #RING_SIZE}</td><td>gauge</td><td>slots of the ring</td></tr>
 *     <tr><td>{@value #BATCH_COMMANDS}</td><td>summary</td><td>commands per store-stage append</td></tr>
 *     <tr><td>{@value #BATCH_EVENTS}</td><td>summary</td><td>events per store-stage append</td></tr>
 *     <tr><td>{@value #THREAD_BUSY}</td><td>gauge</td><td>each stage thread's CPU time over wall time (1.0: a whole
 *         core), tagged {@code thread}, over the last second or more before it is read</td></tr>
 *     <tr><td>{@value #THREAD_IN_STORE}</td><td>gauge</td><td>a store thread's time in the store's transactions over
 *         wall time, tagged {@code thread}, over the same window: a store thread mostly in the store but little busy
 *         waits on the database</td></tr>
 *     <tr><td>{@value #THREAD_CPU}</td><td>function counter</td><td>each stage thread's CPU time in seconds, tagged
 *         {@code thread} (its rate is {@value #THREAD_BUSY})</td></tr>
 *     <tr><td>{@value #THREAD_STORE}</td><td>function counter</td><td>a store thread's seconds in the store's
 *         transactions, tagged {@code thread}</td></tr>
 *     <tr><td>{@value #STAGE_LATENCY}</td><td>timer</td><td>time per command, tagged {@code stage}: {@code preload}
 *         (published to preloaded), {@code handle} (preloaded to handled), {@code store-publish} (handled to both
 *         stored and published), {@code end-to-end} (published to completing)</td></tr>
 * </table>
 * The counters, summaries and timers are created once; recording a command allocates nothing (a failure's counter
 * is created the first time its exception class is seen). Use it outside Spring as
 * {@code RingCommandBus.builder().pipelineMonitor(metrics)}, then {@link #bindTo(RingCommandBus)} once built.
 */
public class RingbusMetrics implements PipelineMonitor {

    /** Completed commands. */
    public static final String COMMANDS = "ringbus.commands";
    /** Failed commands, tagged {@code exception}. */
    public static final String FAILURES = "ringbus.commands.failed";
    /** Free slots of the ring. */
    public static final String REMAINING = "ringbus.ring.remaining";
    /** Slots of the ring. */
    public static final String RING_SIZE = "ringbus.ring.size";
    /** Commands per store batch. */
    public static final String BATCH_COMMANDS = "ringbus.store.batch.commands";
    /** Events per store batch. */
    public static final String BATCH_EVENTS = "ringbus.store.batch.events";
    /** Each stage thread's busy share of a core, tagged {@code thread}. */
    public static final String THREAD_BUSY = "ringbus.stage.thread.busy";
    /** Each store thread's share of time in the store's transactions, tagged {@code thread}. */
    public static final String THREAD_IN_STORE = "ringbus.stage.thread.in.store";
    /** Each stage thread's CPU seconds, tagged {@code thread}. */
    public static final String THREAD_CPU = "ringbus.stage.thread.cpu";
    /** Each store thread's seconds in the store's transactions, tagged {@code thread}. */
    public static final String THREAD_STORE = "ringbus.stage.thread.store";
    /** Per-stage time of each command, tagged {@code stage}. */
    public static final String STAGE_LATENCY = "ringbus.stage.latency";

    private final MeterRegistry registry;
    private final Tags tags;
    private final Counter commands;
    private final Timer preload;
    private final Timer handle;
    private final Timer storePublish;
    private final Timer endToEnd;
    private final DistributionSummary batchCommands;
    private final DistributionSummary batchEvents;
    private final ConcurrentMap<Class<?>, Counter> failures = new ConcurrentHashMap<>();

    /**
     * @param registry where the meters are registered
     * @param busName  the value of the {@code bus} tag
     */
    public RingbusMetrics(MeterRegistry registry, String busName) {
        this.registry = Objects.requireNonNull(registry, "registry");
        this.tags = Tags.of("bus", Objects.requireNonNull(busName, "busName"));
        this.commands = Counter.builder(COMMANDS).tags(tags).description("Commands completed by the ring")
                               .baseUnit("commands").register(registry);
        this.preload = stageTimer("preload");
        this.handle = stageTimer("handle");
        this.storePublish = stageTimer("store-publish");
        this.endToEnd = stageTimer("end-to-end");
        this.batchCommands = DistributionSummary.builder(BATCH_COMMANDS).tags(tags).baseUnit("commands")
                                                .description("Commands per store-stage append").register(registry);
        this.batchEvents = DistributionSummary.builder(BATCH_EVENTS).tags(tags).baseUnit("events")
                                              .description("Events per store-stage append").register(registry);
    }

    private Timer stageTimer(String stage) {
        return Timer.builder(STAGE_LATENCY).tags(tags).tag("stage", stage)
                    .description("Time commands spent in a stage of the ring: preload, handle, store-publish, "
                                         + "or end-to-end (published to completing)")
                    .register(registry);
    }

    /**
     * Registers the gauges of the bus's ring, and those of each of its stage threads (named when the bus was built;
     * a share in [0, 1] from the first read, 0 before the threads start and after they end; the CPU meters only where
     * the JVM measures threads' CPU time, see {@link ThreadShares}).
     *
     * @param bus the bus this monitor was given to
     * @return this
     */
    public RingbusMetrics bindTo(RingCommandBus bus) {
        Gauge.builder(REMAINING, bus, RingCommandBus::remainingCapacity).tags(tags).baseUnit("slots")
             .description("Free slots of the ring").strongReference(false).register(registry);
        Gauge.builder(RING_SIZE, bus, RingCommandBus::ringSize).tags(tags).baseUnit("slots")
             .description("Slots of the ring").strongReference(false).register(registry);
        // Held strongly by its meters; it holds the bus weakly, as the gauges above do.
        ThreadShares shares = new ThreadShares(bus);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        boolean cpuMeasured = threads.isThreadCpuTimeSupported() && threads.isThreadCpuTimeEnabled();
        for (StageThreadTimes thread : bus.stageThreadTimes()) {
            String name = thread.thread();
            Tags threadTags = tags.and("thread", name);
            if (cpuMeasured) {
                Gauge.builder(THREAD_BUSY, shares, s -> s.busy(name)).tags(threadTags).baseUnit("cores")
                     .description("A stage thread's CPU time over wall time, over the last second or more")
                     .strongReference(true).register(registry);
                FunctionCounter.builder(THREAD_CPU, shares, s -> s.cpuSeconds(name)).tags(threadTags)
                               .baseUnit("seconds").description("A stage thread's CPU time").register(registry);
            }
            if (thread.stores()) {
                Gauge.builder(THREAD_IN_STORE, shares, s -> s.inStore(name)).tags(threadTags)
                     .description("A store thread's time in the store's transactions over wall time, over the "
                                          + "last second or more")
                     .strongReference(true).register(registry);
                FunctionCounter.builder(THREAD_STORE, shares, s -> s.storeSeconds(name)).tags(threadTags)
                               .baseUnit("seconds").description("A store thread's time in the store's transactions")
                               .register(registry);
            }
        }
        return this;
    }

    @Override
    public boolean timesStages() {
        return true;
    }

    @Override
    public void commandCompleted(String commandName, Throwable failure, StageTimes times) {
        commands.increment();
        if (failure != null) {
            failureCounter(failure.getClass()).increment();
        }
        long dispatched = times.dispatchedNanos();
        long preloaded = times.preloadedNanos();
        long handled = times.handledNanos();
        long completing = times.completingNanos();
        if (dispatched == 0 || completing == 0) {
            return;
        }
        if (preloaded != 0) {
            preload.record(preloaded - dispatched, TimeUnit.NANOSECONDS);
            if (handled != 0) {
                handle.record(handled - preloaded, TimeUnit.NANOSECONDS);
            }
        }
        if (handled != 0) {
            storePublish.record(completing - handled, TimeUnit.NANOSECONDS);
        }
        endToEnd.record(completing - dispatched, TimeUnit.NANOSECONDS);
    }

    private Counter failureCounter(Class<?> type) {
        Counter counter = failures.get(type);
        if (counter == null) {
            counter = failures.computeIfAbsent(type, t -> Counter.builder(FAILURES).tags(tags)
                                                                 .tag("exception", exceptionName(t))
                                                                 .description("Commands that failed")
                                                                 .baseUnit("commands").register(registry));
        }
        return counter;
    }

    private static String exceptionName(Class<?> type) {
        String simple = type.getSimpleName();
        return simple.isEmpty() ? type.getName() : simple;
    }

    @Override
    public void appended(int commands, int events) {
        batchCommands.record(commands);
        batchEvents.record(events);
    }
}
