package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.messaging.InterceptorChain;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.AggregateMember;
import org.axonframework.modelling.command.CommandHandlerInterceptor;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Commands on existing aggregates are invoked as Axon invokes them, whatever the aggregate declares: command handler
 * interceptors on the aggregate run around its handlers, commands of an aggregate member reach that entity, and the
 * events a handler applies (on the root or on an entity) are sourced and stored.
 */
class AggregateInvocationTest {

    private RingbusFixture ring;

    @AfterEach
    void close() {
        if (ring != null) {
            ring.close();
        }
    }

    private void startWith(Class<?> aggregateType) {
        ring = RingbusFixture.notStarted();
        ring.bus.registerAggregate(aggregateType);
        ring.bus.start();
    }

    @Test
    void anAggregatesCommandHandlerInterceptorRunsAroundItsInstanceCommands() {
        startWith(Guarded.class);
        ring.sendAndWait(new Guarded.Create("g"));

        Object accepted = ring.send(new Guarded.Add("g", 5)).awaitSuccess();
        Throwable refused = ring.send(new Guarded.Add("g", -1)).awaitFailure();

        assertThat(accepted).isEqualTo(5L);
        assertThat(refused).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("-1");
        assertThat(Guarded.intercepted).containsExactly("Add 5", "Add -1");
        assertThat(ring.storedPayloads("g")).containsExactly(new Guarded.Created("g"), new Guarded.Added("g", 5));
    }

    @Test
    void aCommandHandledByAnAggregateMemberReachesTheEntity() {
        startWith(Household.class);
        ring.sendAndWait(new Household.Create("h"));

        Object first = ring.send(new Household.SetBudget("h", 300)).awaitSuccess();
        Object second = ring.send(new Household.SetBudget("h", 500)).awaitSuccess();

        assertThat(first).isEqualTo(0L);
        assertThat(second).isEqualTo(300L);
        assertThat(ring.storedPayloads("h")).containsExactly(new Household.Created("h"),
                                                             new Household.BudgetSet("h", 300),
                                                             new Household.BudgetSet("h", 500));
    }

    /** An aggregate whose command handler interceptor refuses negative amounts and records what it saw. */
    static class Guarded {

        static final List<String> intercepted = new CopyOnWriteArrayList<>();

        record Create(@TargetAggregateIdentifier String id) {
        }

        record Add(@TargetAggregateIdentifier String id, long amount) {
        }

        record Created(String id) {
        }

        record Added(String id, long amount) {
        }

        @AggregateIdentifier
        private String id;
        private long total;

        protected Guarded() {
        }

        @CommandHandler
        Guarded(Create command) {
            intercepted.clear();
            apply(new Created(command.id()));
        }

        @CommandHandlerInterceptor
        Object guard(Add command, InterceptorChain chain) throws Exception {
            intercepted.add("Add " + command.amount());
            if (command.amount() < 0) {
                throw new IllegalArgumentException("refused amount " + command.amount());
            }
            return chain.proceed();
        }

        @CommandHandler
        long handle(Add command) {
            apply(new Added(id, command.amount()));
            return total;
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Added event) {
            total += event.amount();
        }
    }

    /** An aggregate with a member entity that handles its own command and sources its own state. */
    static class Household {

        record Create(@TargetAggregateIdentifier String id) {
        }

        record SetBudget(@TargetAggregateIdentifier String id, long amount) {
        }

        record Created(String id) {
        }

        record BudgetSet(String id, long amount) {
        }

        @AggregateIdentifier
        private String id;
        @AggregateMember
        private Budget budget;

        protected Household() {
        }

        @CommandHandler
        Household(Create command) {
            apply(new Created(command.id()));
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
            budget = new Budget();
        }

        static class Budget {

            private long amount;

            /** Returns the budget before the change. */
            @CommandHandler
            long handle(SetBudget command) {
                long before = amount;
                apply(new BudgetSet(command.id(), command.amount()));
                return before;
            }

            @EventSourcingHandler
            void on(BudgetSet event) {
                amount = event.amount();
            }
        }
    }
}
