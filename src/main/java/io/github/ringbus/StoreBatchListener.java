package io.github.ringbus;

/**
 * Told the size of every batch the store stage appends, on the store stage's thread; for metrics. Must be quick and
 * must not throw.
 */
@FunctionalInterface
public interface StoreBatchListener {

    /**
     * @param commands the number of commands whose events were appended together
     * @param events   the number of events appended
     */
    void appended(int commands, int events);
}
