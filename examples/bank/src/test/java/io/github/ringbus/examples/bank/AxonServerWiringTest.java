package io.github.ringbus.examples.bank;

import io.github.ringbus.RingCommandBus;
import org.axonframework.axonserver.connector.command.AxonServerCommandBus;
import org.axonframework.commandhandling.CommandBus;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.test.context.SpringBootTest;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * With Axon Server switched on, Axon's AxonServerCommandBus is the application's command bus and routes the commands
 * this application handles to its local segment: ringbus's bus. Only the wiring is checked: no Axon Server runs here
 * (the connector keeps trying to reach the unreachable address in the background).
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.NONE, properties = {
        "axon.axonserver.enabled=true",
        "axon.axonserver.servers=127.0.0.1:1"
})
class AxonServerWiringTest {

    @Autowired
    private CommandBus commandBus;
    @Autowired
    @Qualifier("localSegment")
    private CommandBus localSegment;
    @Autowired
    private RingCommandBus ring;

    @Test
    void axonServerRoutesToTheRingAsItsLocalSegment() {
        assertThat(commandBus).isInstanceOf(AxonServerCommandBus.class);
        assertThat(localSegment).isSameAs(ring);
        assertThat(((AxonServerCommandBus) commandBus).localSegment()).isSameAs(ring);
        assertThat(RingCommandBus.localRingOf(commandBus)).isSameAs(ring);
        assertThat(ring.isRunning()).isTrue();
    }
}
