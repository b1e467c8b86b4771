package io.github.ringbus;

import com.lmax.disruptor.SequenceBarrier;
import io.github.ringbus.fixtures.Account;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.axonframework.eventsourcing.GenericAggregateFactory;
import org.axonframework.eventsourcing.NoSnapshotTriggerDefinition;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiFunction;

/**
 * The handler side of the store component, for the component's tests alone (a bench: no ring, no handler thread of
 * the bus): it handles commands into slots as the handle stage leaves them (an aggregate's holder and generation, the
 * events at the aggregate's next sequence numbers), and a thread of its own serves the store thread's requests to
 * run commands again ({@link ReRuns}) as a handler thread does ({@code HandleStage.reRun}): it reads the aggregate
 * from the store, starts a new generation and runs again, in ring order, each later command of that aggregate that
 * the policy lets run again, its events now those {@link #onRunAgain} gives. Every request it served is recorded.
 */
final class HandlerStandIn implements AutoCloseable {

    private final AggregateModel<Account> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(Account.class);
    private final RingEventStore eventStore;
    private final EventStorageEngine engine;
    private final RingRepository<Account> repository;
    private final StoreRecovery recovery;
    /** The store thread hands commands back through this; hand it to the store stage under test. */
    final ReRuns reRuns = new ReRuns(1);
    private final ReRunBarrier<ReRuns.Request> barrier;
    private final Map<String, AggregateHolder<Account>> holders = new HashMap<>();
    private final List<CommandSlot> slots = new CopyOnWriteArrayList<>();
    /** The ring sequence of the first command of each request served, in order. */
    final List<Long> requestsFrom = new CopyOnWriteArrayList<>();
    /** What made a request fail (the aggregate could not be read from the store, say), in order. */
    final List<Throwable> failures = new CopyOnWriteArrayList<>();
    private volatile BiFunction<CommandSlot, Long, List<Object>> onRunAgain = (slot, next) -> List.of();
    private volatile boolean closed;
    private volatile boolean declining;
    private final Thread thread;

    HandlerStandIn(RingEventStore eventStore, EventStorageEngine engine, StoreRecovery recovery) {
        this.eventStore = eventStore;
        this.engine = engine;
        this.recovery = recovery;
        this.repository = new RingRepository<>(model, new GenericAggregateFactory<>(model), eventStore, null,
                                               NoSnapshotTriggerDefinition.INSTANCE, 10, () -> Long.MAX_VALUE,
                                               new AnnotatedTargetResolver());
        this.barrier = reRuns.barrierFor(0, new NoRing());
        this.thread = new Thread(this::serve, "handler-stand-in");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    /**
     * What a command's run again applies: given its slot and the aggregate's next sequence number as stored, the
     * payloads of its events (none: it answers or fails without events).
     */
    void onRunAgain(BiFunction<CommandSlot, Long, List<Object>> payloads) {
        this.onRunAgain = payloads;
    }

    /** From now on every request is declined, as a handler thread declines one it cannot carry out. */
    void declineRequests() {
        declining = true;
    }

    /**
     * Handles a command on account {@code id} (held in memory from its first command on, as the ring's cache holds
     * it), as the handle stage leaves its slot: in the account's current generation, with these events at the
     * account's next sequence numbers in memory.
     */
    CommandSlot handle(String id, String command, Object... payloads) throws Exception {
        AggregateHolder<Account> holder = holders.computeIfAbsent(id, key -> new AggregateHolder<>(repository, key));
        CommandSlot slot = new CommandSlot(eventStore);
        slot.sequence = slots.size();
        slot.segment = 0;
        slot.command = GenericCommandMessage.asCommandMessage(command);
        slot.holder = holder;
        slot.ledger.ranOn(holder.beginCommand(slot));
        long next = nextInMemory(id);
        for (Object payload : payloads) {
            slot.events.add(new GenericDomainEventMessage<>("Account", id, next++, payload));
        }
        holder.commandSucceeded(slot.events);
        slots.add(slot);
        return slot;
    }

    /** The next sequence number of the account: after what is stored and what this side handled since. */
    private long nextInMemory(String id) {
        long next = engine.lastSequenceNumberFor(id).map(last -> last + 1).orElse(0L);
        for (CommandSlot slot : slots) {
            for (EventMessage<?> event : slot.events) {
                if (event instanceof GenericDomainEventMessage<?> domain && domain.getAggregateIdentifier().equals(id)
                        && slot.storeFailure == null) {
                    next = Math.max(next, domain.getSequenceNumber() + 1);
                }
            }
        }
        return next;
    }

    private void serve() {
        while (!closed) {
            ReRuns.Request request = barrier.poll();
            if (request == null) {
                Thread.onSpinWait();
                continue;
            }
            if (!request.start()) {
                continue;
            }
            boolean ranAgain = false;
            try {
                requestsFrom.add(request.from);
                ranAgain = !declining && runAgain(request);
            } catch (Exception | Error failure) {
                failures.add(failure); // declined: the store thread fails the command as built on given-up state
            } finally {
                request.finish(ranAgain);
            }
        }
    }

    /** As {@code HandleStage.reRun}: the aggregate as stored, a new generation, each later command run again. */
    private boolean runAgain(ReRuns.Request request) throws Exception {
        AggregateHolder<?> holder = request.holder;
        holder.restartFromStore();
        long next = engine.lastSequenceNumberFor(holder.identifier()).map(last -> last + 1).orElse(0L);
        for (CommandSlot slot : new ArrayList<>(slots)) {
            if (slot.sequence < request.from || slot.holder != holder
                    || !recovery.mayRunAgain(StoreRecovery.Command.of(slot))) {
                continue;
            }
            slot.prepareReRun(ReRuns.discardedRun(slot, holder));
            slot.ledger.ranOn(holder.beginCommand(slot));
            for (Object payload : onRunAgain.apply(slot, next)) {
                slot.events.add(new GenericDomainEventMessage<>("Account", holder.identifier(), next++, payload));
            }
            holder.commandSucceeded(slot.events);
        }
        return true;
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        thread.join(5_000);
    }

    /** The ring barrier a handler thread waits on: none here (the stand-in polls its requests). */
    private static final class NoRing implements SequenceBarrier {
        @Override
        public long waitFor(long sequence) {
            throw new UnsupportedOperationException("the stand-in never waits on a ring");
        }

        @Override
        public long getCursor() {
            return -1;
        }

        @Override
        public boolean isAlerted() {
            return false;
        }

        @Override
        public void alert() {
            // the stand-in's thread polls: nothing to wake
        }

        @Override
        public void clearAlert() {
        }

        @Override
        public void checkAlert() {
        }
    }
}
