package io.github.ringbus;

import java.time.Duration;

/**
 * The store failing, as {@link RingCommandBus#storeFailure()} reads it at one moment: since when every attempt of a
 * store thread to store has failed (no attempt of it has stored since), when the last one failed, and with what. The
 * attempts of a store thread that cannot be reached fail one after the other; one command the store refuses (a
 * conflict, a subscriber) fails only its own attempt and the next one stores, ending the failure.
 *
 * @param failingFor       how long that store thread's attempts have all failed
 * @param sinceLastFailure how long ago its last attempt failed (no attempt since: the ring may have had no commands)
 * @param lastFailure      the last failure, as its exception's class and message
 */
public record StoreFailure(Duration failingFor, Duration sinceLastFailure, String lastFailure) {
}
