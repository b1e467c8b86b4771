package io.github.ringbus;

import org.axonframework.eventhandling.EventMessage;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;

/**
 * A command's ledger of the aggregates its run touched, one value its slot holds ({@link CommandSlot#ledger}): the
 * generation of its own aggregate's state it ran on, the other aggregates that commands run in place from its handler
 * changed (borrowed, each with its generation), the aggregate such a command is running on now, the aggregates it
 * created beside its own, and how many times it was run again. From these follow its fate at the store:
 * whether it was built on a state the store gave up ({@link #builtOnGivenUpState}), which generations its refusal
 * gives up ({@link #poison}), what its storing records ({@link #stored}).
 * <p>
 * Written by the handle stage (the command's handler thread), before the store stage reads it: the ring's sequence
 * barrier orders the two. Preallocated, so nothing is allocated per command; {@link #clear} when its slot is cleared.
 * <p>
 * Tests: {@code behaviour.WaitingForAnotherAggregateTest}, {@code behaviour.CreateNewTest},
 * {@code model.ExternalHandlerScenarioTest}, {@code behaviour.RefusedAppendNeighboursTest}.
 */
final class CommandLedger {

    /** The generation of the command's own aggregate's state its events were applied to; see {@link AggregateHolder}. */
    private int generation;
    /**
     * True once the handler ran on its aggregate's state ({@link #generation} is then set): the command's outcome
     * depends on that state whether or not it produced events (a query answers it, a rule fails on it), so the store
     * stage treats the command as built on it even when there is nothing to store.
     */
    private boolean ranOnAggregate;
    /**
     * The other aggregates that commands sent and waited for from this command's handler ran on, in place, on this
     * thread ({@link NestedDispatch}): their events are among the command's, and they succeed, roll back, are stored or
     * are given up with this command. Each stays bound to the command's slot until its handler is done. Empty for
     * nearly every command (preallocated, so nothing is allocated per command).
     */
    private final ArrayList<AggregateHolder<?>> borrowed = new ArrayList<>(2);
    /** The generation of each {@link #borrowed} holder its events were applied to, at the same index. */
    private final ArrayList<Integer> borrowedGenerations = new ArrayList<>(2);
    /** The aggregate a command running in place for another aggregate loads, while it runs; otherwise null. */
    private AggregateHolder<?> inPlaceTarget;
    /**
     * Aggregates this command's run created beside its own target: by {@code createNew}, by an external handler's
     * {@code newInstance}, or by a command sent on a command bus beside the ring (an injected
     * {@code SimpleCommandBus}). Not in any cache until stored; as in Axon's Unit of Work, the same command's later
     * loads of them, and the commands it sends to them, find them here ({@link #createdAlongside(Object, String)}).
     * Preallocated and empty for nearly every command.
     */
    private final ArrayList<AggregateHolder<?>> createdAlongside = new ArrayList<>(0);
    /** How many times the command was run again ({@link ReRuns}). */
    private int reRunCount;

    /** The handler runs on its aggregate's state of that generation. */
    void ranOn(int generation) {
        this.generation = generation;
        this.ranOnAggregate = true;
    }

    /** @return true when the handler ran on its own aggregate's state, or a command it ran in place changed another */
    boolean ranOnAggregateState() {
        return ranOnAggregate || !borrowed.isEmpty();
    }

    // --- aggregates of commands run in place from this command's handler --------------------------------------------

    /**
     * A command for another aggregate, sent and waited for from this command's handler, runs in place on that
     * aggregate: until the next call, the repository hands its handler that aggregate. When it is done, the target
     * goes back to the one before it (null at the top; the enclosing command's aggregate when it was sent from the
     * handler of a command itself run in place).
     */
    void runInPlaceOn(AggregateHolder<?> target) {
        inPlaceTarget = target;
    }

    /** @return the aggregate of the command running in place from this command's handler, or null */
    AggregateHolder<?> inPlaceTarget() {
        return inPlaceTarget;
    }

    /**
     * Records that a command run in place changed {@code other}, in its state of {@code otherGeneration}: from now on
     * it shares this command's fate.
     */
    void borrow(AggregateHolder<?> other, int otherGeneration) {
        int index = borrowed.indexOf(other);
        if (index < 0) {
            borrowed.add(other);
            borrowedGenerations.add(otherGeneration);
        } else {
            borrowedGenerations.set(index, otherGeneration);
        }
    }

    /** @return whether a command run in place from this command's handler already changed {@code other} */
    boolean hasBorrowed(AggregateHolder<?> other) {
        return borrowed.contains(other);
    }

    /**
     * @param repository a ring repository
     * @param identifier an aggregate identifier
     * @return the aggregate of that repository and identifier that this command borrowed (loaded by its handler, or
     *         changed by a command it ran in place) and that is still lent to it; null when none
     */
    AggregateHolder<?> borrowedOf(Object repository, String identifier) {
        return find(borrowed, repository, identifier);
    }

    /** @return the holder of that repository and identifier in {@code holders}, or null */
    private static AggregateHolder<?> find(List<AggregateHolder<?>> holders, Object repository, String identifier) {
        for (int i = 0; i < holders.size(); i++) {
            AggregateHolder<?> holder = holders.get(i);
            if (holder.repository() == repository && identifier.equals(holder.identifier())) {
                return holder;
            }
        }
        return null;
    }

    /** @return true when its handler ran another aggregate's command in place (it borrowed that aggregate) */
    boolean ranCommandsInPlace() {
        return !borrowed.isEmpty();
    }

    /** Calls {@code action} with each aggregate a command run in place from this command's handler changed. */
    void forEachBorrowed(Consumer<AggregateHolder<?>> action) {
        for (int i = 0; i < borrowed.size(); i++) {
            action.accept(borrowed.get(i));
        }
    }

    /** The command succeeded: the borrowed aggregates record its events as handled and not yet stored. */
    void borrowedSucceeded(List<EventMessage<?>> events) {
        for (int i = 0; i < borrowed.size(); i++) {
            borrowed.get(i).commandSucceeded(events);
        }
    }

    /**
     * The command failed and its events are discarded: each borrowed aggregate is restored to its state before the
     * commands run in place; one that cannot be restored now is read again before its next command, and why is added
     * to {@code failure}.
     */
    void borrowedRolledBack(List<EventMessage<?>> events, Throwable failure) {
        for (int i = borrowed.size() - 1; i >= 0; i--) {
            AggregateHolder<?> other = borrowed.get(i);
            try {
                other.commandRolledBack(events);
            } catch (Throwable restoreFailure) {
                failure.addSuppressed(restoreFailure);
            }
        }
    }

    // --- its fate at the store (store stage) --------------------------------------------------------------------------

    /**
     * @param own the command's own aggregate, or null
     * @return the aggregate whose state the command's events were built on and which the store gave up (an earlier
     * command's events of it failed to be stored), or null
     */
    AggregateHolder<?> builtOnGivenUpState(AggregateHolder<?> own) {
        if (own != null && own.isPoisoned(generation)) {
            return own;
        }
        for (int i = 0; i < borrowed.size(); i++) {
            if (borrowed.get(i).isPoisoned(borrowedGenerations.get(i))) {
                return borrowed.get(i);
            }
        }
        return null;
    }

    /** The command's events failed to be stored: every aggregate they belong to is given up. */
    void poison(AggregateHolder<?> own) {
        if (own != null) {
            own.poison(generation);
        }
        for (int i = 0; i < borrowed.size(); i++) {
            borrowed.get(i).poison(borrowedGenerations.get(i));
        }
    }

    /** The command's events are committed: each aggregate records its last stored event. */
    void stored(AggregateHolder<?> own, List<EventMessage<?>> events) {
        if (own != null) {
            own.stored(events);
        }
        for (int i = 0; i < borrowed.size(); i++) {
            borrowed.get(i).stored(events);
        }
    }

    // --- aggregates created beside the ring, and runs again ----------------------------------------------------------

    /** This command's run created that aggregate beside its own target (see {@link #createdAlongside}). */
    void createdAlongside(AggregateHolder<?> created) {
        createdAlongside.add(created);
    }

    /** @return true when this command's run created that aggregate beside its own target */
    boolean isCreatedAlongside(AggregateHolder<?> holder) {
        return createdAlongside.contains(holder);
    }

    /**
     * @return the aggregate of that repository and identifier that this command's run created beside its own target,
     *         or null
     */
    AggregateHolder<?> createdAlongside(Object repository, String identifier) {
        return find(createdAlongside, repository, identifier);
    }

    /** @return how many times the command was handled again so far */
    int reRunCount() {
        return reRunCount;
    }

    /** @return true while the command is handled again, until its slot is filled anew */
    boolean isReRun() {
        return reRunCount > 0;
    }

    /** The last run is discarded and the command handled again: what that run touched is forgotten, and counted. */
    void forgetRun() {
        reRunCount++;
        createdAlongside.clear();
        generation = 0;
        ranOnAggregate = false;
    }

    /** Forgets everything, for the slot's next command. */
    void clear() {
        generation = 0;
        ranOnAggregate = false;
        borrowed.clear();
        borrowedGenerations.clear();
        inPlaceTarget = null;
        createdAlongside.clear();
        reRunCount = 0;
    }
}
