package io.github.ringbus.examples.jpa;

import jakarta.persistence.CollectionTable;
import jakarta.persistence.Column;
import jakarta.persistence.ElementCollection;
import jakarta.persistence.Entity;
import jakarta.persistence.FetchType;
import jakarta.persistence.Id;
import jakarta.persistence.MapKeyColumn;
import jakarta.persistence.Table;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.axonframework.spring.stereotype.Aggregate;

import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * A state-stored aggregate: a JPA entity that Axon loads and saves with its {@code GenericJpaRepository}. It counts
 * increments, remembers the last number each dispatcher sent (and how many arrived out of order), and records the
 * threads its commands ran on.
 */
@Entity
@Aggregate
@Table(name = "state_stored_counter")
public class Counter {

    /** The threads each counter's commands were handled on (test bookkeeping, not state). */
    static final Map<String, Set<String>> HANDLER_THREADS = new ConcurrentHashMap<>();

    public record CreateCounter(@TargetAggregateIdentifier String counterId) {
    }

    public record Increment(@TargetAggregateIdentifier String counterId, int dispatcher, long number) {
    }

    /** Increments and applies an event, then throws. */
    public record IncrementThenFail(@TargetAggregateIdentifier String counterId) {
    }

    /** Increments and applies an event; a prepare-commit handler registered after the event then vetoes. */
    public record IncrementThenVeto(@TargetAggregateIdentifier String counterId) {
    }

    public record CounterCreated(String counterId) {
    }

    public record Incremented(String counterId, long count) {
    }

    @Id
    @AggregateIdentifier
    private String counterId;
    private long count;
    private long outOfOrder;
    @ElementCollection(fetch = FetchType.EAGER)
    @CollectionTable(name = "state_stored_counter_last")
    @MapKeyColumn(name = "dispatcher")
    @Column(name = "last_number")
    private Map<Integer, Long> lastByDispatcher = new HashMap<>();

    protected Counter() {
    }

    @CommandHandler
    public Counter(CreateCounter command) {
        this.counterId = command.counterId();
        recordThread();
        apply(new CounterCreated(counterId));
    }

    @CommandHandler
    public long handle(Increment command) {
        recordThread();
        Long last = lastByDispatcher.get(command.dispatcher());
        if (last != null && command.number() <= last) {
            outOfOrder++;
        }
        lastByDispatcher.put(command.dispatcher(), command.number());
        count++;
        apply(new Incremented(counterId, count));
        return count;
    }

    @CommandHandler
    public void handle(IncrementThenFail command) {
        recordThread();
        count++;
        apply(new Incremented(counterId, count));
        throw new IllegalStateException("refused after apply");
    }

    @CommandHandler
    public void handle(IncrementThenVeto command) {
        recordThread();
        count++;
        apply(new Incremented(counterId, count));
        // Registered after the event bus's own prepare-commit handler: runs after the event was appended.
        CurrentUnitOfWork.get().onPrepareCommit(u -> {
            throw new IllegalStateException("vetoed at prepare commit");
        });
    }

    private void recordThread() {
        HANDLER_THREADS.computeIfAbsent(counterId, id -> ConcurrentHashMap.newKeySet())
                       .add(Thread.currentThread().getName());
    }

    public String counterId() {
        return counterId;
    }

    public long count() {
        return count;
    }

    public long outOfOrder() {
        return outOfOrder;
    }
}
