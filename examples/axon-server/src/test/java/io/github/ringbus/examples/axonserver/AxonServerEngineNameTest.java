package io.github.ringbus.examples.axonserver;

import org.axonframework.axonserver.connector.event.axon.AxonServerEventStore;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ringbus recognises Axon Server's storage engine by its class name (its root build has no Axon Server connector):
 * tracking tokens from Axon Server never skip an event committed late, so several store threads need no bound on how
 * far they commit past one another. The root build's {@code AxonInternalsTest} checks that this test names the class
 * ringbus looks for; this test checks that the connector still has it.
 */
class AxonServerEngineNameTest {

    static final String AXON_SERVER_ENGINE =
            "org.axonframework.axonserver.connector.event.axon.AxonServerEventStore$AxonIQEventStorageEngine";

    @Test
    void axonServersStorageEngineHasTheNameRingbusRecognises() throws Exception {
        Class<?> engine = Class.forName(AXON_SERVER_ENGINE);
        assertThat(engine.getEnclosingClass()).isEqualTo(AxonServerEventStore.class);
        assertThat(EventStorageEngine.class.isAssignableFrom(engine)).isTrue();
    }
}
