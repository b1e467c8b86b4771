package io.github.ringbus.model;

import io.github.ringbus.PipelineWaitException;
import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.config.Configuration;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Nested Units of Work, as Axon's reference guide describes them: a command a handler sends and waits for runs in a
 * Unit of Work nested in its sender's, whose changes are committed with the root's, and rolled back with it. A sender
 * that fails after its nested commands succeeded takes their events with it; a sender that catches a nested command's
 * failure commits what else it did; a nested command's own rollback leaves its sender's events. On the ring as on
 * {@code SimpleCommandBus} where the nested commands can run in place (one handler thread, nothing of their aggregate
 * waiting in the ring): the same answers and the same streams; elsewhere the documented refusal.
 */
class NestedUnitOfWorkScenarioTest extends OnTwins {

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Wallet.class))
                              .registerCommandHandler(Payments::new));
    }

    private static List<Object> program() {
        return List.of(new Open("a"), new Open("b"), new Put("a", 100),
                       new Pay("a", "b", 10, false),      // both nested commands commit with the root
                       new Pay("a", "b", 20, true),       // the root fails after both: neither is stored
                       new Pay("a", "missing", 30, false), // the nested deposit fails: the root fails, the withdrawal too
                       new PayOrKeep("a", "missing", 40),  // the root catches the nested failure: the withdrawal stays
                       new PayOrKeep("a", "b", 50),
                       new Put("a", -1),                   // a nested rule refuses, nothing else changes
                       new Balance("a"), new Balance("b"));
    }

    @Test
    void onOneHandlerThreadNestedCommandsCommitAndRollBackWithTheirRootAsOnSimpleCommandBus() {
        start(Topology.COMPACT);

        List<List<Outcome>> outcomes = twins.sendAll(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(0).get(9).result()).as("a's balance on Axon's bus").isEqualTo(0);
        assertThat(twins.storedOnBoth("a").get(1)).isEqualTo(twins.storedOnBoth("a").get(0));
        assertThat(twins.storedOnBoth("b").get(1)).isEqualTo(twins.storedOnBoth("b").get(0));
    }

    /**
     * The documented limit (design.md, "Commands sent from a handler"): a handler on a pipeline thread that waits for
     * another aggregate's command which cannot run in place (several handler threads, or commands of that aggregate
     * already waiting in the ring) has it refused with {@code PipelineWaitException}, not dispatched; the payment then
     * fails whole, and nothing of it is stored, where SimpleCommandBus runs it.
     */
    @Test
    void whereANestedCommandCannotRunInPlaceItIsRefusedAndItsRootFailsWithNothingOfItStored() {
        start(Topology.FULL);

        List<Outcome> onRing = twins.sendAll(program()).get(1);

        assertThat(onRing.subList(3, 8)).allSatisfy(
                payment -> assertThat(payment.failure()).isEqualTo(PipelineWaitException.class));
        assertThat(onRing.get(9).result()).as("a's balance: only the 100 put in").isEqualTo(100);
        assertThat(onRing.get(10).result()).as("b's balance").isEqualTo(0);
    }

    record Open(@TargetAggregateIdentifier String id) {
    }

    /** Puts money in (or, negative, is refused by the wallet's rule). */
    record Put(@TargetAggregateIdentifier String id, int amount) {
    }

    record Take(@TargetAggregateIdentifier String id, int amount) {
    }

    record Balance(@TargetAggregateIdentifier String id) {
    }

    /** Takes from one wallet and puts into another, each a nested command; fails at the end if asked. */
    record Pay(String from, String to, int amount, boolean failAfter) {
    }

    /** As {@link Pay}, but a failed deposit is caught and the money kept out of the sender's wallet anyway. */
    record PayOrKeep(String from, String to, int amount) {
    }

    record Opened(String id) {
    }

    record Changed(int amount) {
    }

    static class Payments {

        private final Configuration configuration;

        Payments(Configuration configuration) {
            this.configuration = configuration;
        }

        @CommandHandler
        String handle(Pay command) {
            String unitOfWork = CurrentUnitOfWork.get().isRoot() ? "root" : "nested";
            configuration.commandGateway().sendAndWait(new Take(command.from(), command.amount()));
            configuration.commandGateway().sendAndWait(new Put(command.to(), command.amount()));
            if (command.failAfter()) {
                throw new IllegalStateException("the payment is called off after both nested commands");
            }
            return unitOfWork;
        }

        @CommandHandler
        String handle(PayOrKeep command) {
            configuration.commandGateway().sendAndWait(new Take(command.from(), command.amount()));
            try {
                configuration.commandGateway().sendAndWait(new Put(command.to(), command.amount()));
                return "paid";
            } catch (RuntimeException nestedFailed) {
                return "kept: " + nestedFailed.getClass().getSimpleName();
            }
        }
    }

    public static class Wallet {

        @AggregateIdentifier
        private String id;
        private int balance;

        public Wallet() {
        }

        @CommandHandler
        public Wallet(Open command) {
            apply(new Opened(command.id()));
        }

        @CommandHandler
        public int handle(Put command) {
            if (command.amount() < 0) {
                throw new IllegalArgumentException("nothing negative goes in");
            }
            apply(new Changed(command.amount()));
            return balance;
        }

        @CommandHandler
        public int handle(Take command) {
            apply(new Changed(-command.amount()));
            return balance;
        }

        @CommandHandler
        public int handle(Balance command) {
            return balance;
        }

        @EventSourcingHandler
        void on(Opened event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Changed event) {
            balance += event.amount();
        }
    }
}
