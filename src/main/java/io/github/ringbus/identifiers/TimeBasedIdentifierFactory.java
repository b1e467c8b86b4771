package io.github.ringbus.identifiers;

import com.fasterxml.uuid.Generators;
import com.fasterxml.uuid.UUIDClock;
import com.fasterxml.uuid.impl.TimeBasedEpochGenerator;
import org.axonframework.common.IdentifierFactory;

import java.util.function.LongSupplier;

/**
 * Axon {@link IdentifierFactory} that generates version 7 UUIDs (RFC 9562: 48-bit Unix-epoch milliseconds followed
 * by 74 random bits), as canonical 36-character lowercase strings. Registered through
 * {@code META-INF/services/org.axonframework.common.IdentifierFactory}, so {@link IdentifierFactory#getInstance()}
 * returns it whenever ringbus is on the class path.
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

    /*
     * One generator per thread. The library's TimeBasedEpochGenerator is thread-safe, but it makes every call take
     * one monitor (synchronized on its entropy buffer), so a single shared generator serializes all threads.
     */
    private final ThreadLocal<TimeBasedEpochGenerator> generators;

    /**
     * Creates the factory; used by Axon through {@link java.util.ServiceLoader}.
     */
    public TimeBasedIdentifierFactory() {
        this(System::currentTimeMillis);
    }

    /**
     * Creates a factory reading the time from {@code wallClock}, in Unix-epoch milliseconds (for tests).
     */
    TimeBasedIdentifierFactory(LongSupplier wallClock) {
        this.generators = ThreadLocal.withInitial(
                () -> Generators.timeBasedEpochGenerator(null, new NeverBackwardsClock(wallClock)));
    }

    @Override
    public String generateIdentifier() {
        return generators.get().generate().toString();
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
