package io.github.ringbus.examples.polymorphic;

import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Import;

/** The application of {@link StateStoredPolymorphicAggregateTest}: vehicles of two kinds, state-stored through JPA. */
@SpringBootApplication
@Import(EmbeddedPostgresDatabase.class)
public class Garage {
}
