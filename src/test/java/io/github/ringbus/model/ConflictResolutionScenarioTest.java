package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.conflictresolution.ConflictResolver;
import org.axonframework.eventsourcing.conflictresolution.Conflicts;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.ConflictingAggregateVersionException;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateVersion;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * Axon's optimistic concurrency ({@code @TargetAggregateVersion}) and conflict resolution on the ring as on
 * {@code SimpleCommandBus}: a command that expected an older version gets a {@link ConflictResolver} over the events it
 * did not see (also those still on their way to the store) and fails only when it leaves a conflict unresolved; one
 * that expects a version the aggregate does not have yet fails at once.
 */
class ConflictResolutionScenarioTest extends OnTwins {

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Doc.class)));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aStaleCommandWhoseResolverFindsNoConflictSucceeds(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Write("d"), new Edit("d", 0L, "title", "a"), new Edit("d", 0L, "body", "b"),
                new Edit("d", 1L, "body", "c")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(2).failed()).isFalse();
        assertThat(twins.storedOnBoth("d").get(1)).isEqualTo(twins.storedOnBoth("d").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void theResolverSeesTheUnseenEventsStillOnTheirWayToTheStore(Topology topology) {
        start(topology);
        twins.send(new Write("d"));
        List<Object> burst = new java.util.ArrayList<>();
        for (int i = 0; i < 40; i++) {
            burst.add(new Edit("d", 0L, i % 7 == 0 ? "title" : "field-" + i, "v" + i));
        }
        List<List<Outcome>> outcomes = twins.sendAllAtOnce(burst);

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1)).filteredOn(Outcome::failed).hasSize(5);
        assertThat(twins.storedOnBoth("d").get(1)).isEqualTo(twins.storedOnBoth("d").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aStaleCommandWhoseResolverFindsAConflictFailsWithTheResolversException(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Write("d"), new Edit("d", 0L, "title", "a"), new Edit("d", 0L, "title", "b"),
                new Edit("d", 1L, "title", "c")));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(2).failure()).isEqualTo(IllegalStateException.class);
        assertThat(twins.storedOnBoth("d").get(1)).isEqualTo(twins.storedOnBoth("d").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aStaleCommandWhoseHandlerNeverAsksTheResolverFailsAtCommit(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Write("d"), new Edit("d", 0L, "title", "a"), new Stamp("d", 0L, false), new Stamp("d", 1L, false)));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(2).failure()).isEqualTo(ConflictingAggregateVersionException.class);
        assertThat(twins.storedOnBoth("d").get(1)).isEqualTo(twins.storedOnBoth("d").get(0));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aStaleCommandRefusedByItsOwnRuleFailsWithTheRulesException(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Write("d"), new Edit("d", 0L, "title", "a"), new Stamp("d", 0L, true)));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(2).failure()).isEqualTo(UnsupportedOperationException.class);
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aCommandExpectingAVersionFromTheFutureFails(Topology topology) {
        start(topology);
        List<List<Outcome>> outcomes = twins.sendAll(List.of(
                new Write("d"), new Edit("d", 0L, "title", "a"), new Edit("d", 99L, "body", "b"),
                new Stamp("d", 1L, false)));

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(2).failure()).isEqualTo(ConflictingAggregateVersionException.class);
        assertThat(twins.storedOnBoth("d").get(1)).isEqualTo(twins.storedOnBoth("d").get(0));
    }

    record Write(@TargetAggregateIdentifier String id) {
    }

    /** Sets a field; conflicts with an unseen edit of the same field. */
    record Edit(@TargetAggregateIdentifier String id, @TargetAggregateVersion Long version, String field,
                String value) {
    }

    /** Never asks its resolver; {@code refuse} makes its own rule fail first. */
    record Stamp(@TargetAggregateIdentifier String id, @TargetAggregateVersion Long version, boolean refuse) {
    }

    record Written(String id) {
    }

    record Edited(String field, String value) {
    }

    record Stamped() {
    }

    static class Doc {

        @AggregateIdentifier
        private String id;

        Doc() {
        }

        @CommandHandler
        Doc(Write command) {
            apply(new Written(command.id()));
        }

        @CommandHandler
        void handle(Edit command, ConflictResolver conflicts) {
            conflicts.detectConflicts(Conflicts.payloadMatching(Edited.class,
                                                                e -> e.field().equals(command.field())),
                                      description -> new IllegalStateException(
                                              "edited meanwhile: " + description.unexpectedEvents().size()));
            apply(new Edited(command.field(), command.value()));
        }

        @CommandHandler
        void handle(Stamp command) {
            if (command.refuse()) {
                throw new UnsupportedOperationException("no stamps");
            }
            apply(new Stamped());
        }

        @EventSourcingHandler
        void on(Written event) {
            id = event.id();
        }
    }
}
