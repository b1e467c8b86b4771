package io.github.ringbus.spring;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;

/**
 * With {@code ringbus.enabled=false}: one line in the log at start-up saying that ringbus is off and Axon's own buses
 * run, so that an operator who finds ringbus on the class path and no ring in the log knows why. Nothing else.
 */
@AutoConfiguration
@ConditionalOnProperty(prefix = RingbusProperties.PREFIX, name = "enabled", havingValue = "false")
public class RingbusOffAutoConfiguration {

    /** The line logged at start-up. */
    static final String LINE = "ringbus is off (ringbus.enabled=false): Axon's own command bus and event bus are "
                               + "configured as without ringbus; remove the property to turn it on";

    private static final Logger logger = LoggerFactory.getLogger(RingbusOffAutoConfiguration.class);

    /** @return the marker whose creation logs {@link #LINE} */
    @Bean
    public RingbusOff ringbusOff() {
        logger.info(LINE);
        return new RingbusOff(LINE);
    }

    /**
     * Says that ringbus is off in this application, and what the log said about it.
     *
     * @param line the line logged at start-up
     */
    public record RingbusOff(String line) {
    }
}
