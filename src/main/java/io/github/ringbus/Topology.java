package io.github.ringbus;

/**
 * How many threads run the ring's stages. Both run the same stages in the same order
 * ({@code preload -> handle -> store -> (publish) -> complete}) with the same guarantees; they differ in how many
 * hand-offs between threads a command takes.
 */
public enum Topology {

    /**
     * One thread per stage: preload, each handler thread, store, publish (with {@link PublishMode#PARALLEL} or
     * {@link PublishMode#AFTER_STORE}), complete. Stages overlap on machines with a core for each. With several store
     * threads ({@code storeThreads}), each of them stores, publishes and completes the commands of its share of the
     * aggregates, as {@link #COMPACT}'s second thread does for all of them; publish then runs after the store, so
     * {@link PublishMode#PARALLEL} behaves as {@link PublishMode#AFTER_STORE}.
     */
    FULL,

    /**
     * Two threads: one preloads and handles each command (one handler thread), the other stores, publishes and
     * completes each batch. Fewer hand-offs and fewer threads to park and wake, for machines of a few cores. Publish
     * runs after the store, so {@link PublishMode#PARALLEL} behaves as {@link PublishMode#AFTER_STORE}. Needs
     * {@code handlerThreads} and {@code storeThreads} of 1.
     */
    COMPACT
}
