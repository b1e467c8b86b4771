package io.github.ringbus;

import java.lang.reflect.Proxy;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.common.transaction.NoTransactionManager;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.eventsourcing.eventstore.jdbc.JdbcEventStorageEngine;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.CreationPolicy;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Which commands may create an aggregate, and which always do (so that their preload may skip the read). */
class AggregateCommandNamesTest {

    record Create(@TargetAggregateIdentifier String id) {
    }

    record CreateAlways(@TargetAggregateIdentifier String id) {
    }

    record CreateIfMissing(@TargetAggregateIdentifier String id) {
    }

    record Change(@TargetAggregateIdentifier String id) {
    }

    static class Thing {

        @AggregateIdentifier
        String id;

        Thing() {
        }

        @CommandHandler
        Thing(Create command) {
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.ALWAYS)
        void handle(CreateAlways command) {
        }

        @CommandHandler
        @CreationPolicy(AggregateCreationPolicy.CREATE_IF_MISSING)
        void handle(CreateIfMissing command) {
        }

        @CommandHandler
        void handle(Change command) {
        }
    }

    @Test
    void constructorsAndEveryCreationPolicyButNeverMayCreate() {
        var names = AggregateCommandNames.of(AnnotatedAggregateMetaModelFactory.inspectAggregate(Thing.class));

        assertThat(names).containsEntry(Create.class.getName(), true)
                         .containsEntry(CreateAlways.class.getName(), true)
                         .containsEntry(CreateIfMissing.class.getName(), true)
                         .containsEntry(Change.class.getName(), false);
    }

    @Test
    void onlyConstructorsAndCreationPolicyAlwaysAlwaysCreate() {
        var names = AggregateCommandNames.alwaysCreating(AnnotatedAggregateMetaModelFactory.inspectAggregate(Thing.class));

        assertThat(names).containsExactlyInAnyOrder(Create.class.getName(), CreateAlways.class.getName());
    }

    @Test
    void creationSkipsTheReadOnAxonsJdbcJpaAndInMemoryEnginesAndTheirSubclassesOnly() {
        class OwnJdbcEngine extends JdbcEventStorageEngine {
            OwnJdbcEngine() {
                super(JdbcEventStorageEngine.builder().connectionProvider(() -> null)
                                            .transactionManager(NoTransactionManager.INSTANCE));
            }
        }
        class OwnInMemoryEngine extends InMemoryEventStorageEngine {
        }
        EventStorageEngine unknown = (EventStorageEngine) Proxy.newProxyInstance(
                getClass().getClassLoader(), new Class<?>[]{EventStorageEngine.class}, (proxy, method, args) -> null);

        assertThat(RingRepository.skipsReadForCreation(new OwnJdbcEngine())).isTrue();
        assertThat(RingRepository.skipsReadForCreation(new InMemoryEventStorageEngine())).isTrue();
        assertThat(RingRepository.skipsReadForCreation(new OwnInMemoryEngine())).isTrue();
        assertThat(RingRepository.skipsReadForCreation(unknown)).isFalse();
        assertThat(RingRepository.skipsReadForCreation(null)).isFalse();
    }
}
