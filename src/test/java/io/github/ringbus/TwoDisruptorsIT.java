package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.disruptor.commandhandling.DisruptorCommandBus;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Runs against the packaged (shaded) ringbus jar with Disruptor 3.4.4 on the class path, as in every Axon 4
 * application: Axon's own DisruptorCommandBus and ringbus work side by side in one JVM.
 */
class TwoDisruptorsIT {

    @Test
    void classPathHoldsDisruptor3AndRingbusItsOwnRelocatedCopy() throws Exception {
        Class<?> applicationDisruptor = Class.forName("com.lmax.disruptor.RingBuffer");
        assertThat(applicationDisruptor.getProtectionDomain().getCodeSource().getLocation().getPath())
                .contains("disruptor-3.4.4");
        Class<?> ringbusDisruptor = Class.forName("io.github.ringbus.shaded.com.lmax.disruptor.RingBuffer");
        assertThat(ringbusDisruptor.getProtectionDomain().getCodeSource().getLocation())
                .isEqualTo(RingCommandBus.class.getProtectionDomain().getCodeSource().getLocation());
    }

    @Test
    void axonsDisruptorCommandBusRunsBesideRingbus() {
        Configuration axonDisruptor = DefaultConfigurer.defaultConfiguration()
                .configureEmbeddedEventStore(c -> new InMemoryEventStorageEngine())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> DisruptorCommandBus.builder().build())
                .start();
        Configuration ringbus = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                                                       .storageEngine(new InMemoryEventStorageEngine())
                                                       .build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder().eventStore(c.eventStore()).build())
                .start();
        try {
            axonDisruptor.commandGateway().sendAndWait(new Open("a"));
            ringbus.commandGateway().sendAndWait(new Open("a"));

            assertThat((Object) axonDisruptor.commandGateway().sendAndWait(new Deposit("a", 2))).isEqualTo(2L);
            assertThat((Object) ringbus.commandGateway().sendAndWait(new Deposit("a", 3))).isEqualTo(3L);
        } finally {
            ((DisruptorCommandBus) axonDisruptor.commandBus()).stop();
            axonDisruptor.shutdown();
            ringbus.shutdown();
        }
    }
}
