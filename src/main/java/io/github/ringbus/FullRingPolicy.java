package io.github.ringbus;

/**
 * What {@code dispatch} does when every slot of the ring is taken.
 * <p>
 * A dispatch from one of the bus's own stage threads (a handler or subscribing event handler that dispatches another
 * command) never waits: if the ring is full it fails at once with {@link RingFullException}, because the slot it would
 * wait for can only be freed by the thread that is waiting. An application's callback runs on the callback thread,
 * not a stage thread: its dispatches follow the policy like any other.
 */
public enum FullRingPolicy {

    /** Wait until a slot is free. The caller is held back by the pipeline's pace (back-pressure). */
    BLOCK,

    /**
     * Wait until a slot is free, at most the configured timeout; then the command's callback receives a
     * {@link RingFullException}.
     */
    BLOCK_WITH_TIMEOUT,

    /** Never wait: the command's callback receives a {@link RingFullException} at once. */
    FAIL_FAST
}
