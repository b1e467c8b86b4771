package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.messaging.interceptors.ExceptionHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Axon's {@code @ExceptionHandler} on command handlers, on the ring as on {@code SimpleCommandBus}: an exception
 * handler sees the failure and may apply events; one that returns answers the command in its place (Axon's
 * {@code ResultHandlingInterceptorMember}), and what it applied is stored; one that throws fails the command, and its
 * Unit of Work rolls back with everything applied before. On an external handler (modelled on a cart that fails to
 * publish, whose exception handler loads the cart again) and on an aggregate.
 */
class ExceptionHandlerScenarioTest extends OnTwins {

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Cart.class))
                                          .registerCommandHandler(Publisher::new));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void anExternalHandlersExceptionHandlerThatReturnsAnswersTheCommandAndKeepsWhatItApplied(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new CreateCart("c"), new Publish("c", false), new Submit("c"), new Publish("c", false),
                new Count("c")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1)).noneMatch(Outcome::failed);
        assertThat(twins.storedOnBoth("c").get(1)).isEqualTo(twins.storedOnBoth("c").get(0)).hasSize(4);
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void anExternalHandlersExceptionHandlerThatThrowsFailsTheCommandAndStoresNothingOfIt(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new CreateCart("c"), new Publish("c", true), new Count("c"), new Submit("c"),
                new Publish("c", true), new Count("c")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(1).failure()).isEqualTo(IllegalArgumentException.class);
        assertThat(twins.storedOnBoth("c").get(1)).isEqualTo(twins.storedOnBoth("c").get(0)).hasSize(3);
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void anAggregatesExceptionHandlerDoesNotTurnTheFailureIntoASuccess(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new CreateCart("c"), new Checkout("c"), new Count("c"), new Submit("c"), new Checkout("c"),
                new Count("c")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(twins.storedOnBoth("c").get(1)).isEqualTo(twins.storedOnBoth("c").get(0));
    }

    record CreateCart(@TargetAggregateIdentifier String id) {
    }

    record Submit(@TargetAggregateIdentifier String id) {
    }

    record Publish(@TargetAggregateIdentifier String id, boolean rethrow) {
    }

    record Checkout(@TargetAggregateIdentifier String id) {
    }

    record Count(@TargetAggregateIdentifier String id) {
    }

    record Created(String id) {
    }

    record Submitted() {
    }

    record Published() {
    }

    record PublicationFailed(String reason) {
    }

    record CheckedOut() {
    }

    static class Publisher {

        private final Configuration configuration;

        Publisher(Configuration configuration) {
            this.configuration = configuration;
        }

        @CommandHandler
        void handle(Publish command) {
            configuration.repository(Cart.class).load(command.id()).execute(Cart::publish);
        }

        @ExceptionHandler
        void onFailure(Publish command, IllegalStateException failure) {
            configuration.repository(Cart.class).load(command.id())
                         .execute(cart -> cart.failPublication(failure.getMessage()));
            if (command.rethrow()) {
                throw new IllegalArgumentException("publication failed: " + failure.getMessage(), failure);
            }
        }
    }

    static class Cart {

        @AggregateIdentifier
        private String id;
        private boolean submitted;
        private int events;

        Cart() {
        }

        @CommandHandler
        Cart(CreateCart command) {
            apply(new Created(command.id()));
        }

        @CommandHandler
        void handle(Submit command) {
            apply(new Submitted());
        }

        @CommandHandler
        void handle(Checkout command) {
            if (!submitted) {
                throw new IllegalStateException("not submitted");
            }
            apply(new CheckedOut());
        }

        @ExceptionHandler(resultType = IllegalStateException.class)
        void onCheckoutFailure(IllegalStateException failure) {
            apply(new PublicationFailed("checkout: " + failure.getMessage()));
        }

        @CommandHandler
        int handle(Count command) {
            return events;
        }

        void publish() {
            if (!submitted) {
                throw new IllegalStateException("never submitted");
            }
            apply(new Published());
        }

        void failPublication(String reason) {
            apply(new PublicationFailed(reason));
        }

        @EventSourcingHandler
        void on(Object event) {
            events++;
            if (event instanceof Created created) {
                id = created.id();
            } else if (event instanceof Submitted) {
                submitted = true;
            }
        }
    }
}
