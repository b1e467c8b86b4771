package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.commandhandling.gateway.CommandGateway;
import org.axonframework.commandhandling.gateway.DefaultCommandGateway;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.common.lock.PessimisticLockFactory;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.AnnotatedAggregateMetaModelFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * An aggregate that keeps a repository of its own (here Axon's {@code EventSourcingRepository}, a
 * {@code LockingRepository} with Axon's default {@link PessimisticLockFactory}) registered with
 * {@link RingAggregates#registerOwnRepositoryAggregate}, on two handler threads: its commands are routed by
 * aggregate and each runs whole on one thread, so the lock is taken and released there.
 */
class OwnRepositoryAggregateTest {

    private final RingEventStore eventStore =
            RingEventStore.builder().storageEngine(new InMemoryEventStorageEngine()).build();
    private final RingCommandBus bus = RingCommandBus.builder().eventStore(eventStore).handlerThreads(2).build();
    private final CommandGateway gateway = DefaultCommandGateway.builder().commandBus(bus).build();
    private final Map<String, Set<String>> threadsByAccount = new ConcurrentHashMap<>();

    OwnRepositoryAggregateTest() {
        AggregateModel<Account> model = AnnotatedAggregateMetaModelFactory.inspectAggregate(Account.class);
        EventSourcingRepository<Account> repository =
                EventSourcingRepository.builder(Account.class)
                                       .aggregateModel(model)
                                       .eventStore(eventStore)
                                       .lockFactory(PessimisticLockFactory.usingDefaults())
                                       .build();
        AnnotatedTargetResolver targetResolver = new AnnotatedTargetResolver();
        AggregateAnnotationCommandHandler.<Account>builder()
                                         .aggregateType(Account.class)
                                         .aggregateModel(model)
                                         .repository(repository)
                                         .commandTargetResolver(targetResolver)
                                         .build()
                                         .subscribe(bus);
        bus.aggregates().registerOwnRepositoryAggregate(model, targetResolver);
        bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            Object payload = unitOfWork.getMessage().getPayload();
            String account = payload instanceof Deposit deposit ? deposit.accountId() : "other";
            threadsByAccount.computeIfAbsent(account, a -> ConcurrentHashMap.newKeySet())
                            .add(Thread.currentThread().getName());
            return chain.proceed();
        });
        bus.start();
    }

    @AfterEach
    void shutDown() {
        bus.shutdown();
    }

    @Test
    void manyCommandsFromSeveralDispatchersUnderAxonsPessimisticLockAllSucceedInOrderOnTheirAggregatesThread()
            throws Exception {
        int accounts = 3;
        int dispatchers = 4;
        int perDispatcherAndAccount = 50;
        for (int a = 0; a < accounts; a++) {
            gateway.sendAndWait(new Open("own-" + a), 10, TimeUnit.SECONDS);
        }

        ExecutorService pool = Executors.newFixedThreadPool(dispatchers);
        try {
            List<Future<List<CompletableFuture<Object>>>> sent = new ArrayList<>();
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                sent.add(pool.submit(() -> {
                    List<CompletableFuture<Object>> results = new ArrayList<>();
                    for (int n = 1; n <= perDispatcherAndAccount; n++) {
                        for (int a = 0; a < accounts; a++) {
                            // The amount says who sent it and in which order: dispatcher * 1000 + n.
                            results.add(gateway.send(new Deposit("own-" + a, dispatcher * 1000L + n)));
                        }
                    }
                    return results;
                }));
            }
            for (Future<List<CompletableFuture<Object>>> dispatched : sent) {
                for (CompletableFuture<Object> result : dispatched.get(10, TimeUnit.SECONDS)) {
                    result.get(10, TimeUnit.SECONDS);
                }
            }
        } finally {
            pool.shutdownNow();
        }

        for (int a = 0; a < accounts; a++) {
            String id = "own-" + a;
            List<DomainEventMessage<?>> events = eventStore.readEvents(id).asStream().collect(Collectors.toList());
            assertThat(events).hasSize(1 + dispatchers * perDispatcherAndAccount);
            for (int i = 0; i < events.size(); i++) {
                assertThat(events.get(i).getSequenceNumber()).isEqualTo(i);
            }
            for (int d = 0; d < dispatchers; d++) {
                int dispatcher = d;
                List<Long> fromDispatcher = events.stream()
                                                  .filter(e -> e.getPayload() instanceof Deposited)
                                                  .map(e -> ((Deposited) e.getPayload()).amount())
                                                  .filter(amount -> amount / 1000 == dispatcher)
                                                  .collect(Collectors.toList());
                assertThat(fromDispatcher).as("deposits of dispatcher %d on %s", d, id)
                                          .hasSize(perDispatcherAndAccount)
                                          .isSorted();
            }
            assertThat(threadsByAccount.get(id)).as("threads of %s", id).hasSize(1);
        }
    }

    @Test
    void aFailingCommandReleasesTheLockAndLeavesNoEvent() throws Exception {
        gateway.sendAndWait(new Open("own-fails"), 10, TimeUnit.SECONDS);

        Throwable failure = catchThrowable(
                () -> gateway.sendAndWait(new DepositThenFail("own-fails", 5), 10, TimeUnit.SECONDS));

        assertThat(failure).isInstanceOf(IllegalStateException.class);
        assertThat(gateway.<Long>sendAndWait(new Deposit("own-fails", 7), 10, TimeUnit.SECONDS)).isEqualTo(7L);
        assertThat(eventStore.readEvents("own-fails").asStream().<Object>map(DomainEventMessage::getPayload))
                .containsExactly(new Opened("own-fails"),
                                 new Deposited("own-fails", 7));
    }

    @Test
    void anAggregateTypeRoutedThroughARingRepositoryCannotAlsoBeRoutedWithARepositoryOfItsOwn() {
        RingCommandBus other = RingCommandBus.builder().eventStore(eventStore).build();
        other.registerAggregate(Account.class);

        Throwable refusal = catchThrowable(() -> other.aggregates().registerOwnRepositoryAggregate(
                AnnotatedAggregateMetaModelFactory.inspectAggregate(Account.class), new AnnotatedTargetResolver()));

        assertThat(refusal).isInstanceOf(AxonConfigurationException.class)
                           .hasMessageContaining(Account.class.getName())
                           .hasMessageContaining("through a ring repository")
                           .hasMessageContaining("with a repository of its own");
    }
}
