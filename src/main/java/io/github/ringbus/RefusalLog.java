package io.github.ringbus;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Logs commands that a bus refused while nobody hears of it (a fire-and-forget {@code dispatch(command)} before
 * start or after shutdown): a warning for the first of a burst, then at most one a second, each saying how many were
 * refused since the last one. Thread-safe: any number of dispatchers may record at once; counting is one atomic
 * increment, and only the dispatcher that wins the time slot logs.
 * <p>
 * Tests: {@code behaviour.RefusalTest}.
 */
final class RefusalLog {

    private static final Logger logger = LoggerFactory.getLogger(RefusalLog.class);
    private static final long INTERVAL = TimeUnit.SECONDS.toNanos(1);

    private final AtomicLong unlogged = new AtomicLong();
    private final AtomicLong lastLogged = new AtomicLong(System.nanoTime() - INTERVAL);

    /**
     * Counts one refused command, and logs a warning unless one was logged less than a second ago.
     *
     * @param refusal why the command was refused
     */
    void record(RuntimeException refusal) {
        unlogged.incrementAndGet();
        long now = System.nanoTime();
        long last = lastLogged.get();
        if (now - last < INTERVAL || !lastLogged.compareAndSet(last, now)) {
            return;
        }
        long count = unlogged.getAndSet(0);
        logger.warn("ringbus dropped {} fire-and-forget command(s) since the last such warning; the last: {}", count,
                    refusal.getMessage());
    }
}
