package io.github.ringbus.model;

import io.github.ringbus.Topology;
import org.axonframework.config.Configurer;
import org.junit.jupiter.api.AfterEach;

import java.util.function.Consumer;

/**
 * A scenario test on {@link ConfiguredTwins}: {@link #start} builds the application on both buses for a topology, and
 * the twins are shut down after each test.
 */
abstract class OnTwins {

    ConfiguredTwins twins;

    /** Builds the application twice, Axon's bus and the ring on the given topology. */
    void start(Topology topology, Consumer<Configurer> application) {
        twins = new ConfiguredTwins(application, ConfiguredTwins.on(topology));
    }

    @AfterEach
    void shutDownTwins() {
        if (twins != null) {
            twins.close();
        }
    }
}
