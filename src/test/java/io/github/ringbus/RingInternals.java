package io.github.ringbus;

/**
 * For tests outside this package that check how ringbus wired an application: the types it keeps package-private.
 */
public final class RingInternals {

    /** The repository every ring aggregate gets. */
    public static final Class<?> RING_REPOSITORY = RingRepository.class;

    private RingInternals() {
    }
}
