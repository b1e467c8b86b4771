package io.github.ringbus.examples.setbased;

import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import org.axonframework.config.ConfigurerModule;
import org.axonframework.eventhandling.PropagatingErrorHandler;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

/** The application of {@link SetBasedValidationTest}: members, and a look-up table of their e-mail addresses. */
@SpringBootApplication
@Import(EmbeddedPostgresDatabase.class)
public class Members {

    /** The look-up table's handler propagates its failures, so that they fail the command (set-based validation). */
    @Bean
    ConfigurerModule propagateEmailClaimFailures() {
        return configurer -> configurer.eventProcessing().registerListenerInvocationErrorHandler(
                "email-claims", configuration -> PropagatingErrorHandler.instance());
    }
}
