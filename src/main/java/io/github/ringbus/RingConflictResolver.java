package io.github.ringbus;

import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.conflictresolution.ConflictResolver;
import org.axonframework.eventsourcing.conflictresolution.ContextAwareConflictExceptionSupplier;
import org.axonframework.eventsourcing.conflictresolution.DefaultConflictDescription;
import org.axonframework.modelling.command.ConflictingAggregateVersionException;

import java.util.List;
import java.util.function.Predicate;

/**
 * The conflict resolver a ring command gets when it expected an older version of its aggregate than the one it runs
 * on ({@code @TargetAggregateVersion}), as Axon's {@code EventSourcingRepository} hands out its
 * {@code DefaultConflictResolver}: the handler asks it about the events it did not see, and the command fails at
 * prepare-commit ({@link #ensureConflictsResolved}) with a {@link ConflictingAggregateVersionException} when it never
 * asked. The unseen events are those after the expected version up to the version the command ran on: on the ring
 * some of them may still be on their way to the store, so they are the store's followed by those the aggregate's
 * holder keeps as handled and not yet stored ({@link AggregateHolder#eventsAfter}), read once, when first asked.
 * <p>
 * One per stale command, on the handler thread that runs it; never on the path of a command without an expected
 * version, or with the current one.
 * <p>
 * Tests: {@code model.ConflictResolutionScenarioTest}.
 */
final class RingConflictResolver implements ConflictResolver {

    private final AggregateHolder<?> holder;
    private final String aggregateIdentifier;
    private final long expectedVersion;
    private final long actualVersion;
    private List<DomainEventMessage<?>> unexpected;
    private boolean resolved;

    RingConflictResolver(AggregateHolder<?> holder, String aggregateIdentifier, long expectedVersion,
                         long actualVersion) {
        this.holder = holder;
        this.aggregateIdentifier = aggregateIdentifier;
        this.expectedVersion = expectedVersion;
        this.actualVersion = actualVersion;
    }

    @Override
    public <T extends Exception> void detectConflicts(Predicate<List<DomainEventMessage<?>>> predicate,
                                                      ContextAwareConflictExceptionSupplier<T> exceptionSupplier)
            throws T {
        resolved = true;
        List<DomainEventMessage<?>> events = unexpectedEvents();
        if (predicate.test(events)) {
            T exception = exceptionSupplier.supplyException(
                    new DefaultConflictDescription(aggregateIdentifier, expectedVersion, actualVersion, events));
            if (exception != null) {
                throw exception;
            }
        }
    }

    /**
     * At prepare-commit: a stale command whose handler never asked about conflicts fails, as on Axon's repository.
     *
     * @throws ConflictingAggregateVersionException when no conflict detection was done
     */
    void ensureConflictsResolved() {
        if (!resolved) {
            throw new ConflictingAggregateVersionException(aggregateIdentifier, expectedVersion, actualVersion);
        }
    }

    private List<DomainEventMessage<?>> unexpectedEvents() {
        if (unexpected == null) {
            try {
                unexpected = holder.eventsAfter(expectedVersion, actualVersion);
            } catch (RuntimeException failure) {
                throw failure;
            } catch (Exception unreadable) {
                throw new org.axonframework.eventsourcing.eventstore.EventStoreException(
                        "The events of aggregate [" + aggregateIdentifier + "] after version [" + expectedVersion
                                + "] could not be read to detect conflicts", unreadable);
            }
        }
        return unexpected;
    }
}
