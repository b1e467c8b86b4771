package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An aggregate's holder and its generations: the store stage poisons a generation when an append of it fails; the
 * handler thread's next command then starts a new generation from what the store holds, and until then the aggregate
 * is never read again.
 */
class AggregateHolderTest {

    private final InMemoryEventStorageEngine engine = new InMemoryEventStorageEngine();
    private final EmbeddedEventStore store = EmbeddedEventStore.builder().storageEngine(engine).build();
    private final AggregateModel<Account> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(Account.class);
    private final RingRepository<Account> repository = new RingRepository<>(
            model, new GenericAggregateFactory<>(model), store, null, NoSnapshotTriggerDefinition.INSTANCE, 10,
            () -> Long.MAX_VALUE, new AnnotatedTargetResolver());

    @AfterEach
    void shutdown() {
        store.shutDown();
    }

    private void stored(long sequence, Object payload) {
        engine.appendEvents(new GenericDomainEventMessage<>(Account.class.getSimpleName(), "a", sequence, payload));
    }

    @Test
    void aPoisonedGenerationStaysPoisonedAndLaterGenerationsAreNot() {
        AggregateHolder<Account> holder = new AggregateHolder<>(repository, "a");

        holder.poison(0);
        holder.poison(-1);

        assertThat(holder.isPoisoned(0)).isTrue();
        assertThat(holder.isPoisoned(-1)).isTrue();
        assertThat(holder.isPoisoned(1)).isFalse();
    }

    @Test
    void withoutAPoisonTheNextCommandKeepsItsGenerationAndTheAggregateInMemory() throws Exception {
        stored(0, new Opened("a"));
        AggregateHolder<Account> holder = repository.preloaded().preload("a", false, false, 0, null);
        CommandSlot slot = new CommandSlot(store);
        assertThat(holder.beginCommand(slot)).isEqualTo(0);
        stored(1, new Deposited("a", 10)); // written behind the holder's back: it must not be read

        assertThat(holder.beginCommand(slot)).isEqualTo(0);
        assertThat(holder.aggregate().version()).isEqualTo(0L);
    }

    @Test
    void afterAPoisonTheNextCommandStartsANewGenerationFromTheStoredState() throws Exception {
        stored(0, new Opened("a"));
        AggregateHolder<Account> holder = repository.preloaded().preload("a", false, false, 0, null);
        CommandSlot slot = new CommandSlot(store);
        assertThat(holder.beginCommand(slot)).isEqualTo(0);
        stored(1, new Deposited("a", 10));

        holder.poison(0);

        assertThat(holder.beginCommand(slot)).isEqualTo(1);
        assertThat(holder.aggregate().version()).isEqualTo(1L);
        assertThat(holder.isPoisoned(1)).isFalse();
    }

    @Test
    void aCommandsEventsAreOnTheirWayUntilTheStoreSaysTheyAreStored() throws Exception {
        AggregateHolder<Account> holder = openedAndDepositedOnce();

        assertThat(holder.dropStoredEvents()).as("before the store stage stored them").isTrue();
        holder.storedUpTo(1);
        assertThat(holder.dropStoredEvents()).as("once stored: dropped").isFalse();
    }

    @Test
    void eventsOfAGivenUpGenerationAreDroppedForTheyWillNeverBeStored() throws Exception {
        AggregateHolder<Account> holder = openedAndDepositedOnce();

        holder.poison(0);

        assertThat(holder.dropStoredEvents()).isFalse();
    }

    /** An account stored with its opening, then a deposit handled on it (sequence 1) and not yet stored. */
    private AggregateHolder<Account> openedAndDepositedOnce() throws Exception {
        stored(0, new Opened("a"));
        AggregateHolder<Account> holder = repository.preloaded().preload("a", false, false, 0, null);
        CommandSlot slot = new CommandSlot(store);
        holder.beginCommand(slot);
        holder.commandSucceeded(java.util.List.of(
                new GenericDomainEventMessage<>(Account.class.getSimpleName(), "a", 1, new Deposited("a", 10))));
        return holder;
    }
}
