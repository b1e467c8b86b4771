package io.github.ringbus.examples;

import io.github.ringbus.RingCommandBus;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

/**
 * One Spring Boot application started twice, each with a database of its own: once on ringbus, once with
 * {@code ringbus.enabled=false} on Axon's {@code SimpleCommandBus}, the twin the example compares ringbus with. Checks
 * at start that each runs on the bus it should.
 */
public final class RingAndSimpleApplications implements AutoCloseable {

    public final ConfigurableApplicationContext ring;
    public final ConfigurableApplicationContext simple;

    private RingAndSimpleApplications(ConfigurableApplicationContext ring, ConfigurableApplicationContext simple) {
        this.ring = ring;
        this.simple = simple;
    }

    /** Starts {@code application} on ringbus and then on SimpleCommandBus. */
    public static RingAndSimpleApplications start(Class<?> application) {
        ConfigurableApplicationContext ring = start(application, true);
        ConfigurableApplicationContext simple;
        try {
            simple = start(application, false);
        } catch (RuntimeException | Error failure) {
            ring.close();
            throw failure;
        }
        RingAndSimpleApplications both = new RingAndSimpleApplications(ring, simple);
        if (!(ring.getBean(CommandBus.class) instanceof RingCommandBus)
                || !(simple.getBean(CommandBus.class) instanceof SimpleCommandBus)) {
            both.close();
            throw new IllegalStateException("Expected ringbus and SimpleCommandBus, got "
                                            + ring.getBean(CommandBus.class) + " and "
                                            + simple.getBean(CommandBus.class));
        }
        return both;
    }

    private static ConfigurableApplicationContext start(Class<?> application, boolean ringbus) {
        return new SpringApplicationBuilder(application)
                .properties("ringbus.enabled=" + ringbus, "spring.main.banner-mode=off")
                .run();
    }

    @Override
    public void close() {
        ring.close();
        simple.close();
    }
}
