package io.github.ringbus.examples.transactional;

import io.github.ringbus.examples.EmbeddedPostgresDatabase;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Import;

/** The application of {@link TransactionalHandlerTest}: carts, and a component that publishes them. */
@SpringBootApplication
@Import(EmbeddedPostgresDatabase.class)
public class Shop {
}
