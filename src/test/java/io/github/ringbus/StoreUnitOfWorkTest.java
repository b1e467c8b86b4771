package io.github.ringbus;

import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.eventhandling.GenericEventMessage;
import org.axonframework.messaging.unitofwork.BatchingUnitOfWork;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.messaging.unitofwork.DefaultUnitOfWork;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The store stage's Unit of Work takes Axon's commit apart (prepare, commit, after-commit, or abandon) and a
 * subscribing processor's Unit of Work nested in it keeps its after-commit work for the last step: each test fails on
 * an Axon version whose phases no longer work so.
 */
class StoreUnitOfWorkTest {

    private final HeldEffects held = new HeldEffects();
    private final List<String> happened = new ArrayList<>();

    @AfterEach
    void nothingLeftCurrent() {
        assertThat(CurrentUnitOfWork.isStarted()).as("a Unit of Work left current").isFalse();
    }

    private StoreUnitOfWork started() {
        return StoreUnitOfWork.startFor(GenericCommandMessage.asCommandMessage("command"), held);
    }

    /** What a subscribing processor does: a Unit of Work of its own, executed, its work left for after-commit. */
    private void processorNestedIn(StoreUnitOfWork root) {
        UnitOfWork<?> processor = new BatchingUnitOfWork<>(List.of(GenericEventMessage.asEventMessage("event")));
        processor.executeWithResult(() -> {
            assertThat(CurrentUnitOfWork.get().root()).isSameAs(root);
            CurrentUnitOfWork.get().onPrepareCommit(u -> happened.add("processor prepare"));
            CurrentUnitOfWork.get().afterCommit(u -> happened.add("processor after-commit"));
            CurrentUnitOfWork.get().onRollback(u -> happened.add("processor rollback"));
            return null;
        });
    }

    @Test
    void aNestedProcessorsAfterCommitWorkRunsOnlyInTheLastStep() {
        StoreUnitOfWork unitOfWork = started();
        unitOfWork.onPrepareCommit(u -> happened.add("prepare"));
        unitOfWork.onCommit(u -> happened.add("commit"));
        processorNestedIn(unitOfWork);

        unitOfWork.prepare();
        assertThat(happened).containsExactly("processor prepare", "prepare");
        unitOfWork.commitPhase();
        assertThat(happened).containsExactly("processor prepare", "prepare", "commit");
        unitOfWork.afterCommit();

        assertThat(happened).containsExactly("processor prepare", "prepare", "commit", "processor after-commit");
        assertThat(unitOfWork.phase()).isEqualTo(UnitOfWork.Phase.CLOSED);
    }

    @Test
    void betweenItsStepsItIsNotTheCurrentUnitOfWork() {
        StoreUnitOfWork unitOfWork = started();
        unitOfWork.pause();
        assertThat(CurrentUnitOfWork.isStarted()).isFalse();

        StoreUnitOfWork next = started();
        assertThat(next.parent()).as("the next command's is a root of its own").isEmpty();
        next.pause();
        unitOfWork.prepare();
        assertThat(CurrentUnitOfWork.isStarted()).isFalse();
        unitOfWork.abandon(new IllegalStateException("attempt failed"));
        next.abandon(new IllegalStateException("attempt failed"));
    }

    @Test
    void anAbandonedOneRollsBackWhatNestedInItAndNeverRunsItsAfterCommitWork() {
        StoreUnitOfWork unitOfWork = started();
        processorNestedIn(unitOfWork);
        unitOfWork.prepare();

        unitOfWork.abandon(new IllegalStateException("the batch's transaction rolled back"));

        assertThat(happened).containsExactly("processor prepare", "processor rollback");
        assertThat(unitOfWork.isRolledBack()).isTrue();
        assertThat(unitOfWork.phase()).isEqualTo(UnitOfWork.Phase.CLOSED);
    }

    @Test
    void aFailingPrepareCommitHandlerRollsItBackAndPropagates() {
        StoreUnitOfWork unitOfWork = started();
        unitOfWork.onPrepareCommit(u -> {
            throw new IllegalArgumentException("saga store refused");
        });
        unitOfWork.afterCommit(u -> happened.add("after-commit"));

        assertThatThrownBy(unitOfWork::prepare).isInstanceOf(IllegalArgumentException.class)
                                               .hasMessage("saga store refused");
        assertThat(unitOfWork.isRolledBack()).isTrue();
        unitOfWork.abandon(new IllegalStateException("the attempt failed")); // already ended: nothing to do
        assertThat(happened).isEmpty();
    }

    @Test
    void aUnitOfWorkLeftCurrentOnTheStoreThreadIsDroppedRatherThanNestingTheNextCommand() {
        DefaultUnitOfWork.startAndGet(GenericCommandMessage.asCommandMessage("left behind"));

        StoreUnitOfWork unitOfWork = started();

        assertThat(unitOfWork.parent()).isEmpty();
        unitOfWork.abandon(new IllegalStateException("done"));
    }
}
