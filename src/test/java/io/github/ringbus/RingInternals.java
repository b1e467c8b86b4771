package io.github.ringbus;

/**
 * For tests outside this package that check how ringbus wired an application: the types it keeps package-private.
 */
public final class RingInternals {

    /** The repository every ring aggregate gets. */
    public static final Class<?> RING_REPOSITORY = RingRepository.class;

    private RingInternals() {
    }

    /**
     * @param aggregateIdentifier an aggregate's identifier
     * @param storeThreads        a bus's number of store threads
     * @return the store thread (shard) that stores that aggregate's events
     */
    public static int storeShardOf(String aggregateIdentifier, int storeThreads) {
        return CommandSlot.spread(aggregateIdentifier) % storeThreads;
    }
}
