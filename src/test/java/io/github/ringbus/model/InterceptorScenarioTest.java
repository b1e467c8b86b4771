package io.github.ringbus.model;

import io.github.ringbus.Topology;
import io.github.ringbus.model.ConfiguredTwins.Outcome;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.config.AggregateConfigurer;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.messaging.MetaData;
import org.axonframework.messaging.annotation.MetaDataValue;
import org.axonframework.messaging.unitofwork.UnitOfWork;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.function.Consumer;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * The bus's interceptors and the Unit of Work they see, on the ring as on {@code SimpleCommandBus} (Axon's
 * integration tests of dispatch and handler interceptors and of Unit of Work phases): dispatch interceptors' metadata
 * reaches the handler and the stored events; a handler interceptor that refuses a command, or throws after it
 * proceeded, leaves nothing of that command; the phases of each command's Unit of Work come in Axon's order.
 */
class InterceptorScenarioTest extends OnTwins {

    /** Lets the handler of {@code Add(7)} run, then throws: the command is rolled back after its handler. */
    private static final MessageHandlerInterceptor<CommandMessage<?>> TAKES_SEVEN_BACK = (unitOfWork, chain) -> {
        Object result = chain.proceed();
        if (unitOfWork.getMessage().getPayload() instanceof Add add && add.amount() == 7) {
            throw new IllegalStateException("7 is taken back after its handler");
        }
        return result;
    };

    private void start(Topology topology) {
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Counter.class)));
    }

    /** Registers the same interceptor on both buses; {@code onBus} is called with each bus and its twin's index. */
    private void onBothBuses(java.util.function.BiConsumer<CommandBus, Integer> onBus) {
        onBus.accept(twins.axon.commandBus(), 0);
        onBus.accept(twins.ring.commandBus(), 1);
    }

    private static List<Object> program() {
        return List.of(new Create("c"), new Add("c", 1), new Add("c", 13), new Add("c", 7), new Add("c", 2),
                       new Peek("c"), new Add("missing", 1), new Create("d"), new Add("d", 7), new Peek("d"));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void metaDataAddedByADispatchInterceptorReachesTheHandlerAndTheStoredEvents(Topology topology) {
        // Axon copies the command's "tenant" onto the events it applies once a correlation data provider names it.
        start(topology, c -> c.configureAggregate(AggregateConfigurer.defaultConfiguration(Counter.class))
                              .configureCorrelationDataProviders(conf -> List.of(
                                      new org.axonframework.messaging.correlation.MessageOriginProvider(),
                                      new org.axonframework.messaging.correlation.SimpleCorrelationDataProvider(
                                              "tenant"))));
        onBothBuses((bus, twin) -> bus.registerDispatchInterceptor(
                commands -> (index, command) -> command.andMetaData(MetaData.with("tenant", "t-" + index))));

        List<List<Outcome>> outcomes = twins.sendAll(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(tenants(twins.ringEngine, "c")).isEqualTo(tenants(twins.axonEngine, "c")).isNotEmpty()
                                                   .allMatch(tenant -> tenant != null && tenant.toString().startsWith("t-"));
        assertThat(storedPayloads("c")).containsExactly(payloadsOnAxon("c"));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aHandlerInterceptorThatRefusesACommandLeavesNothingOfIt(Topology topology) {
        start(topology);
        onBothBuses((bus, twin) -> bus.registerHandlerInterceptor((unitOfWork, chain) -> {
            if (unitOfWork.getMessage().getPayload() instanceof Add add && add.amount() == 13) {
                throw new IllegalArgumentException("13 is refused");
            }
            return chain.proceed();
        }));

        List<List<Outcome>> outcomes = twins.sendAll(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(2).failed()).isTrue();
        assertThat(storedPayloads("c")).containsExactly(payloadsOnAxon("c"));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void aHandlerInterceptorThatThrowsAfterTheHandlerRollsTheCommandBack(Topology topology) {
        start(topology);
        onBothBuses((bus, twin) -> bus.registerHandlerInterceptor(TAKES_SEVEN_BACK));

        List<List<Outcome>> outcomes = twins.sendAll(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(outcomes.get(1).get(3).failed()).isTrue();
        assertThat(storedPayloads("c")).containsExactly(payloadsOnAxon("c")).doesNotContain(new Added(7));
        assertThat(storedPayloads("d")).containsExactly(payloadsOnAxon("d"));
    }

    @ParameterizedTest
    @EnumSource(Topology.class)
    void theUnitOfWorkPhasesOfEachCommandComeInAxonsOrder(Topology topology) {
        start(topology);
        List<List<String>> phases = List.of(Collections.synchronizedList(new ArrayList<>()),
                                            Collections.synchronizedList(new ArrayList<>()));
        onBothBuses((bus, twin) -> {
            bus.registerHandlerInterceptor((unitOfWork, chain) -> {
                record(unitOfWork, phases.get(twin));
                return chain.proceed();
            });
            bus.registerHandlerInterceptor(TAKES_SEVEN_BACK);
        });

        List<List<Outcome>> outcomes = twins.sendAll(program());

        assertThat(outcomes.get(1)).isEqualTo(outcomes.get(0));
        assertThat(phases.get(1)).isEqualTo(phases.get(0)).contains("Add(7):ROLLBACK", "Add(2):AFTER_COMMIT");
    }

    private static void record(UnitOfWork<? extends CommandMessage<?>> unitOfWork, List<String> phases) {
        String name = unitOfWork.getMessage().getPayload().toString().replaceAll("\\[.*, amount=(\\d+)]", "($1)")
                                .replaceAll("\\[.*]", "");
        Consumer<UnitOfWork<?>> note = u -> phases.add(name + ":" + u.phase());
        unitOfWork.onPrepareCommit(note::accept);
        unitOfWork.onCommit(note::accept);
        unitOfWork.afterCommit(note::accept);
        unitOfWork.onRollback(note::accept);
        unitOfWork.onCleanup(note::accept);
    }

    private List<Object> storedPayloads(String id) {
        return ConfiguredTwins.stored(twins.ringEngine, id).stream().map(ConfiguredTwins.Stored::payload)
                              .collect(Collectors.toList());
    }

    private Object[] payloadsOnAxon(String id) {
        return ConfiguredTwins.stored(twins.axonEngine, id).stream().map(ConfiguredTwins.Stored::payload).toArray();
    }

    private static List<Object> tenants(InMemoryEventStorageEngine engine, String id) {
        return engine.readEvents(id).asStream().map(event -> event.getMetaData().get("tenant"))
                     .collect(Collectors.toList());
    }

    record Create(@TargetAggregateIdentifier String id) {
    }

    record Add(@TargetAggregateIdentifier String id, int amount) {
    }

    record Peek(@TargetAggregateIdentifier String id) {
    }

    record Created(String id) {
    }

    record Added(int amount) {
    }

    public static class Counter {

        @AggregateIdentifier
        private String id;
        private int count;

        public Counter() {
        }

        @CommandHandler
        public Counter(Create command, @MetaDataValue("tenant") String tenant) {
            apply(new Created(command.id()));
        }

        @CommandHandler
        public int handle(Add command) {
            apply(new Added(command.amount()));
            return count;
        }

        @CommandHandler
        public String handle(Peek command, @MetaDataValue("tenant") String tenant) {
            return count + " for " + tenant;
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
        }

        @EventSourcingHandler
        void on(Added event) {
            count += event.amount();
        }
    }
}
