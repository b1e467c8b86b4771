package io.github.ringbus.benchmarks;

import org.axonframework.commandhandling.CommandBus;

/** A command bus that runs outside an Axon {@code Configuration}, and how to shut it down. */
public record StartedBus(CommandBus bus, Runnable shutdown) {
}
