package io.github.ringbus.spring;

import org.axonframework.commandhandling.CommandBus;
import org.springframework.beans.factory.annotation.Qualifier;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

/**
 * Stands for a third-party starter that decorates the application's command bus with a {@code @Primary} bean around
 * the {@code localSegment} bus, found like any starter through the {@code AutoConfiguration.imports} file (of the
 * test class path) and ordered after Axon's auto-configuration. Off unless {@code ringbus-test.decorating-starter}
 * is set.
 */
@AutoConfiguration(afterName = "org.axonframework.springboot.autoconfig.AxonAutoConfiguration")
@ConditionalOnProperty("ringbus-test.decorating-starter")
public class DecoratingStarterAutoConfiguration {

    @Bean
    @Primary
    public RecordingCommandBus decoratedCommandBus(@Qualifier("localSegment") CommandBus localSegment) {
        return new RecordingCommandBus(localSegment);
    }
}
