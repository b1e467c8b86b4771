package io.github.ringbus.identifiers;

import com.fasterxml.uuid.Generators;
import com.fasterxml.uuid.UUIDClock;
import com.fasterxml.uuid.impl.TimeBasedEpochGenerator;
import org.axonframework.common.DefaultIdentifierFactory;
import org.axonframework.common.IdentifierFactory;
import org.slf4j.LoggerFactory;

import java.util.function.LongSupplier;

/**
 * Axon {@link IdentifierFactory} that generates version 7 UUIDs (RFC 9562: 48-bit Unix-epoch milliseconds followed
 * by 74 random bits), as canonical 36-character lowercase strings. Registered through
 * {@code META-INF/services/org.axonframework.common.IdentifierFactory}, so {@link IdentifierFactory#getInstance()}
 * returns it whenever ringbus is on the class path: every message identifier of the application (events, commands,
 * whichever bus runs them) is then time-ordered, which keeps an event table's identifier index appending at its end.
 * <p>
 * <b>The switch.</b> Axon resolves its identifier factory once, through {@link java.util.ServiceLoader}, on first use,
 * typically before any Spring property exists; so {@code ringbus.enabled} in an application's properties file does
 * not reach it. The system property {@value #SETTING} (or the environment variable {@value #ENVIRONMENT_SETTING})
 * does: {@code axon} gives back Axon's own random (version 4) UUIDs, {@code time-based} (the default) keeps these.
 * Any other value fails the first use of {@code IdentifierFactory.getInstance()} with a message naming the setting.
 * Without that switch, {@code ringbus.enabled=false} given as a system property (or {@code RINGBUS_ENABLED=false} in
 * the environment), where Spring Boot reads it too, turns these identifiers off with the rest of ringbus.
 * <p>
 * Guarantees:
 * <ul>
 *     <li><b>Ordering</b>: identifiers generated one after another on the same thread are strictly increasing, both
 *     as UUIDs and as strings, even within one millisecond and even if the wall clock steps backwards (the previous
 *     timestamp is then reused until the clock catches up). Identifiers from different threads are ordered by their
 *     millisecond only; within one millisecond their relative order is arbitrary.</li>
 *     <li><b>Uniqueness</b>: never repeated on one thread (strictly increasing). Across threads and JVMs it is
 *     probabilistic, as for any random UUID: in each millisecond every thread continues from its own random point in
 *     a 2<sup>73</sup> range.</li>
 *     <li><b>Thread safety</b>: safe to call from any number of threads. Every thread uses its own generator, so
 *     threads do not wait for each other (see {@code docs/identifiers.md}).</li>
 * </ul>
 */
public class TimeBasedIdentifierFactory extends IdentifierFactory {

    /** The system property that chooses the identifiers: {@code time-based} (default) or {@code axon}. */
    public static final String SETTING = "ringbus.identifiers";
    /** The environment variable read when the system property is not set. */
    public static final String ENVIRONMENT_SETTING = "RINGBUS_IDENTIFIERS";
    /** The system property that turns ringbus off; {@code false} also gives back Axon's identifiers. */
    public static final String ENABLED_SETTING = "ringbus.enabled";
    /** The environment variable of {@value #ENABLED_SETTING}, as Spring Boot spells it. */
    public static final String ENABLED_ENVIRONMENT_SETTING = "RINGBUS_ENABLED";

    /*
     * One generator per thread. The library's TimeBasedEpochGenerator is thread-safe, but it makes every call take
     * one monitor (synchronized on its entropy buffer), so a single shared generator serializes all threads.
     */
    private final ThreadLocal<TimeBasedEpochGenerator> generators;
    /** Axon's own factory when the switch says {@code axon}; null for time-based identifiers. */
    private final IdentifierFactory axons;

    /**
     * Creates the factory; used by Axon through {@link java.util.ServiceLoader}.
     *
     * @throws IllegalArgumentException when {@value #SETTING} (or {@value #ENVIRONMENT_SETTING}) has a value other
     *                                  than {@code time-based} or {@code axon}
     */
    public TimeBasedIdentifierFactory() {
        this(choice(System.getProperty(SETTING, System.getenv(ENVIRONMENT_SETTING)),
                    System.getProperty(ENABLED_SETTING, System.getenv(ENABLED_ENVIRONMENT_SETTING))),
             System::currentTimeMillis);
        // Axon logs that it found this factory, whichever identifiers it then makes: say which.
        LoggerFactory.getLogger(TimeBasedIdentifierFactory.class).info("ringbus: message identifiers in force: {}",
                                                                       inForce());
    }

    /**
     * @return which identifiers this factory makes, and which setting chose them, in words for the start-up log
     */
    public String inForce() {
        return axons == null
                ? "time-based (version 7) UUIDs (" + SETTING + "=time-based, the default)"
                : "Axon's random (version 4) UUIDs, as " + SETTING + "=axon or " + ENABLED_SETTING + "=false asked";
    }

    /**
     * The identifiers chosen: the switch when set; else {@code axon} when ringbus is turned off where this factory
     * can see it (the system property or environment variable of {@code ringbus.enabled}, which Spring Boot reads
     * too), so that turning ringbus off that way turns all of it off; else the default.
     *
     * @param setting the value of {@value #SETTING}, or null
     * @param enabled the value of {@value #ENABLED_SETTING}, or null
     * @return the value of the switch to apply, or null for the default
     */
    static String choice(String setting, String enabled) {
        if (setting != null && !setting.isBlank()) {
            return setting;
        }
        return enabled != null && enabled.trim().equalsIgnoreCase("false") ? "axon" : null;
    }

    /**
     * Creates a factory reading the time from {@code wallClock}, in Unix-epoch milliseconds (for tests).
     */
    TimeBasedIdentifierFactory(LongSupplier wallClock) {
        this(null, wallClock);
    }

    /**
     * @param setting   the value of the switch, or null for the default
     * @param wallClock the time, in Unix-epoch milliseconds
     */
    TimeBasedIdentifierFactory(String setting, LongSupplier wallClock) {
        String choice = setting == null || setting.isBlank() ? "time-based" : setting.trim();
        if (choice.equalsIgnoreCase("axon")) {
            this.axons = new DefaultIdentifierFactory();
        } else if (choice.equalsIgnoreCase("time-based")) {
            this.axons = null;
        } else {
            throw new IllegalArgumentException(
                    "ringbus: " + SETTING + " (or " + ENVIRONMENT_SETTING + ") must be time-based or axon, but was ["
                            + setting + "]");
        }
        this.generators = ThreadLocal.withInitial(
                () -> Generators.timeBasedEpochGenerator(null, new NeverBackwardsClock(wallClock)));
    }

    @Override
    public String generateIdentifier() {
        return axons != null ? axons.generateIdentifier() : generators.get().generate().toString();
    }

    /**
     * Returns the wall-clock time, or the last time returned if the wall clock has since moved backwards, so that the
     * generator sees the same millisecond again and keeps counting up instead of restarting from an earlier
     * timestamp. Not thread-safe: each instance belongs to the generator of one thread.
     */
    private static final class NeverBackwardsClock extends UUIDClock {

        private final LongSupplier wallClock;
        private long last = Long.MIN_VALUE;

        NeverBackwardsClock(LongSupplier wallClock) {
            this.wallClock = wallClock;
        }

        @Override
        public long currentTimeMillis() {
            long now = wallClock.getAsLong();
            if (now > last) {
                last = now;
            }
            return last;
        }
    }
}
