package io.github.ringbus.distributed;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.RunOnce;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventhandling.DomainEventMessage;
import org.axonframework.eventsourcing.eventstore.EventStorageEngine;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.axonframework.messaging.interceptors.CorrelationDataInterceptor;
import org.axonframework.serialization.json.JacksonSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link DistributedRingCommandBus} in one JVM: two nodes (two Axon configurations, each with its ring, over JGroups
 * TCP on 127.0.0.1) sharing one in-memory event store. The separate-JVM proof, with kills and PostgreSQL, is
 * {@code io.github.ringbus.postgres.DistributedNodesTest}.
 */
class DistributedRingCommandBusTest {

    private final EventStorageEngine engine = new InMemoryEventStorageEngine();
    private final List<Configuration> nodes = new ArrayList<>();

    @AfterEach
    void shutDown() {
        nodes.forEach(Configuration::shutdown);
    }

    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    private Configuration startNode(String name, int port, List<String> hosts) {
        return startNode(name, port, hosts, true);
    }

    private Configuration startNode(String name, int port, List<String> hosts, boolean localShortcut) {
        return startNode(name, port, hosts, localShortcut, null, Duration.ofSeconds(30));
    }

    private Configuration startNode(String name, int port, List<String> hosts, boolean localShortcut, String secret,
                                    Duration joinTimeout) {
        return startNode(name, port, hosts, localShortcut, secret, joinTimeout, null);
    }

    private Configuration startNode(String name, int port, List<String> hosts, boolean localShortcut, String secret,
                                    Duration joinTimeout, org.jgroups.JChannel channel) {
        Configuration node = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder().storageEngine(engine).build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> {
                    DistributedRingCommandBus.Builder builder = DistributedRingCommandBus.builder()
                            .localSegment(RingCommandBus.builder()
                                                        .eventStore(c.eventStore())
                                                        .threadNamePrefix("ring-" + name)
                                                        .handlerInterceptor(new CorrelationDataInterceptor<CommandMessage<?>>(
                                                                List.of(m -> Map.of("node", name))))
                                                        .build())
                            .serializer(JacksonSerializer.defaultSerializer())
                            .clusterName("test-" + hosts.hashCode())
                            .nodeName(name)
                            .bind("127.0.0.1", port)
                            .initialHosts(hosts)
                            .leaveGracePeriod(Duration.ofMillis(200))
                            .localShortcut(localShortcut)
                            .joinTimeout(joinTimeout);
                    if (secret != null) {
                        builder.sharedSecret(secret);
                    }
                    if (channel != null) {
                        builder.channel(channel);
                    }
                    return builder.build();
                })
                .start();
        nodes.add(node);
        return node;
    }

    private static DistributedRingCommandBus busOf(Configuration node) {
        return (DistributedRingCommandBus) node.commandBus();
    }

    private static void awaitMembers(Configuration node, int members) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (busOf(node).consistentHash().getMembers().size() != members && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(busOf(node).consistentHash().getMembers()).hasSize(members);
    }

    @Test
    void eachAggregateIsHandledOnOneNodeAndBothNodesGetAShare() throws Exception {
        int portA = freePort();
        int portB = freePort();
        List<String> hosts = List.of("127.0.0.1:" + portA, "127.0.0.1:" + portB);
        Configuration a = startNode("a", portA, hosts);
        Configuration b = startNode("b", portB, hosts);
        awaitMembers(a, 2);
        awaitMembers(b, 2);

        for (int i = 0; i < 40; i++) {
            a.commandGateway().sendAndWait(new Open("acc-" + i));
        }
        for (int i = 0; i < 40; i++) {
            Configuration sender = i % 2 == 0 ? a : b;
            assertThat((Long) sender.commandGateway().sendAndWait(new Deposit("acc-" + i, 5))).isEqualTo(5L);
            assertThat((Long) sender.commandGateway().sendAndWait(new Deposit("acc-" + i, 7))).isEqualTo(12L);
        }

        Set<String> handledBy = new java.util.HashSet<>();
        for (int i = 0; i < 40; i++) {
            List<? extends DomainEventMessage<?>> events = engine.readEvents("acc-" + i).asStream().toList();
            Set<Object> nodesOfAccount = events.stream().map(e -> e.getMetaData().get("node"))
                                               .collect(Collectors.toSet());
            assertThat(nodesOfAccount).as("nodes that handled acc-%d", i).hasSize(1);
            handledBy.addAll(nodesOfAccount.stream().map(String::valueOf).toList());
        }
        assertThat(handledBy).as("every node handles a share").containsExactlyInAnyOrder("a", "b");
        for (int i = 0; i < 40; i++) {
            CommandMessage<?> probe = org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage(
                    new Deposit("acc-" + i, 1));
            Object handler = engine.readEvents("acc-" + i).asStream().findFirst().orElseThrow().getMetaData()
                                   .get("node");
            assertThat(busOf(a).isOwnedHere(probe)).as("acc-%d owned by a", i).isEqualTo(handler.equals("a"));
            assertThat(busOf(b).isOwnedHere(probe)).as("acc-%d owned by b", i).isEqualTo(handler.equals("b"));
        }
    }

    /** Dispatches through the node's bus and answers the thread its callback ran on. */
    private static String callbackThreadOf(Configuration node, Object payload) throws Exception {
        java.util.concurrent.CompletableFuture<String> thread = new java.util.concurrent.CompletableFuture<>();
        node.commandBus().dispatch(org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage(payload),
                                   (command, result) -> {
                                       if (result.isExceptional()) {
                                           thread.completeExceptionally(result.exceptionResult());
                                       } else {
                                           thread.complete(Thread.currentThread().getName());
                                       }
                                   });
        return thread.get(10, java.util.concurrent.TimeUnit.SECONDS);
    }

    @Test
    void aCommandOfTheNodesOwnShareGoesStraightToTheRing() throws Exception {
        int port = freePort();
        Configuration alone = startNode("a", port, List.of("127.0.0.1:" + port));
        awaitMembers(alone, 1);

        assertThat(callbackThreadOf(alone, new Open("acc"))).as("completed by the ring itself").startsWith("ring-a");
    }

    @Test
    void withoutTheLocalShortCutEveryCommandTravelsThroughTheConnector() throws Exception {
        int port = freePort();
        Configuration alone = startNode("a", port, List.of("127.0.0.1:" + port), false);
        awaitMembers(alone, 1);

        assertThat(callbackThreadOf(alone, new Open("acc"))).as("answered by the connector's reply")
                                                            .doesNotStartWith("ring-a");
    }

    /**
     * A command a handler sends to another node is out of ringbus's sight once sent: the sending command's Unit of
     * Work is marked {@link RunOnce}, so that ringbus never handles that command a second time (which would send the
     * other one twice). Here the node has no local short-cut, so every command it sends takes the connector's way.
     */
    @Test
    void aCommandSentFromAHandlerThroughTheConnectorMarksTheSendingCommandRunOnce() throws Exception {
        int port = freePort();
        Configuration alone = startNode("a", port, List.of("127.0.0.1:" + port), false);
        awaitMembers(alone, 1);
        Map<String, Boolean> marked = new java.util.concurrent.ConcurrentHashMap<>();
        busOf(alone).localSegment().registerHandlerInterceptor((unitOfWork, chain) -> {
            Open open = (Open) unitOfWork.getMessage().getPayload();
            if (open.accountId().equals("sender")) {
                alone.commandBus().dispatch(GenericCommandMessage.asCommandMessage(new Open("sent")));
            }
            Object result = chain.proceed();
            marked.put(open.accountId(), unitOfWork.resources().containsKey(RunOnce.RESOURCE));
            return result;
        });

        alone.commandGateway().sendAndWait(new Open("sender"));
        alone.commandGateway().sendAndWait(new Open("quiet"));

        assertThat(marked).containsEntry("sender", true).containsEntry("quiet", false);
    }

    @Test
    void dispatchInterceptorsRunOnceOnTheDispatchingNodeWhicheverNodeHandlesTheCommand() throws Exception {
        int portA = freePort();
        int portB = freePort();
        List<String> hosts = List.of("127.0.0.1:" + portA, "127.0.0.1:" + portB);
        Configuration a = startNode("a", portA, hosts);
        Configuration b = startNode("b", portB, hosts);
        awaitMembers(a, 2);
        awaitMembers(b, 2);
        java.util.concurrent.atomic.AtomicInteger intercepted = new java.util.concurrent.atomic.AtomicInteger();
        a.commandBus().registerDispatchInterceptor(messages -> (i, m) -> {
            intercepted.incrementAndGet();
            return m;
        });

        for (int i = 0; i < 20; i++) {
            a.commandGateway().sendAndWait(new Open("acc-" + i));
        }

        assertThat(intercepted).hasValue(20);
    }

    @Test
    void aNodeJoinsOnlyOnceItsRingIsStarted() {
        RingCommandBus ring = RingCommandBus.builder().eventStore(
                RingEventStore.builder().storageEngine(engine).build()).build();
        DistributedRingCommandBus node = DistributedRingCommandBus.builder()
                                                                  .localSegment(ring)
                                                                  .serializer(JacksonSerializer.defaultSerializer())
                                                                  .bind("127.0.0.1", freePort())
                                                                  .build();
        try {
            assertThatThrownBy(node::join).isInstanceOf(IllegalStateException.class)
                                          .hasMessageContaining("ring must be started before the node joins");
            assertThat(node.isJoined()).isFalse();
        } finally {
            node.leave();
        }
    }

    @Test
    void aNodeWithAnotherSecretCannotJoinAndGetsNoCommand() throws Exception {
        int portA = freePort();
        int portB = freePort();
        int portC = freePort();
        List<String> hosts = List.of("127.0.0.1:" + portA, "127.0.0.1:" + portB, "127.0.0.1:" + portC);
        String secret = "correct horse battery staple";
        Configuration a = startNode("a", portA, hosts, true, secret, Duration.ofSeconds(30));
        Configuration b = startNode("b", portB, hosts, true, secret, Duration.ofSeconds(30));
        awaitMembers(a, 2);

        // Refused by the cluster, the intruder either fails to start or stays a cluster of its own. Its channel is
        // ringbus's own stack with another secret; it gives up joining after two tries instead of JGroups' ten.
        String wrongSecret = "another secret, not the cluster's";
        org.jgroups.JChannel intruderChannel = JGroupsChannels.tcp(
                DistributedRingCommandBus.builder().clusterName("test-" + hosts.hashCode()).bind("127.0.0.1", portC)
                                         .initialHosts(hosts).sharedSecret(wrongSecret).tcp());
        org.jgroups.protocols.pbcast.GMS intruderMembership =
                intruderChannel.getProtocolStack().findProtocol(org.jgroups.protocols.pbcast.GMS.class);
        intruderMembership.setMaxJoinAttempts(2);
        try {
            startNode("intruder", portC, hosts, true, wrongSecret, Duration.ofSeconds(5), intruderChannel);
        } catch (RuntimeException refused) {
            // its start failed: nothing joined
        }
        Thread.sleep(1_000); // a view change the intruder forced would show by now
        assertThat(busOf(a).consistentHash().getMembers()).as("members as a sees them").hasSize(2);
        assertThat(busOf(b).consistentHash().getMembers()).as("members as b sees them").hasSize(2);

        for (int i = 0; i < 40; i++) {
            a.commandGateway().sendAndWait(new Open("secret-" + i));
            assertThat((Long) b.commandGateway().sendAndWait(new Deposit("secret-" + i, 3))).isEqualTo(3L);
        }
        Set<Object> handledBy = new java.util.HashSet<>();
        for (int i = 0; i < 40; i++) {
            engine.readEvents("secret-" + i).asStream().forEach(e -> handledBy.add(e.getMetaData().get("node")));
        }
        assertThat(handledBy).as("nodes that handled commands").containsExactlyInAnyOrder("a", "b");
    }

    @Test
    void aNodeBoundToANetworkAddressWithoutASecretIsRefusedAtBuildNamingTheSetting() {
        RingCommandBus ring = RingCommandBus.builder().eventStore(
                RingEventStore.builder().storageEngine(engine).build()).build();
        DistributedRingCommandBus.Builder open = DistributedRingCommandBus.builder()
                                                                          .localSegment(ring)
                                                                          .serializer(JacksonSerializer.defaultSerializer())
                                                                          .bind("0.0.0.0", freePort());

        assertThatThrownBy(open::build)
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("binding to [0.0.0.0], a network address, without a sharedSecret")
                .hasMessageContaining("ringbus.distributed.shared-secret");
        assertThat(open.allowUnauthenticated(true).build()).as("built when explicitly allowed").isNotNull();
        assertThatThrownBy(() -> DistributedRingCommandBus.builder().sharedSecret("too short"))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("sharedSecret must have at least 16 characters");
    }

    @Test
    void theBuilderNamesWhatIsMissingOrWrong() {
        assertThatThrownBy(() -> DistributedRingCommandBus.builder()
                                                          .serializer(JacksonSerializer.defaultSerializer()).build())
                .isInstanceOf(AxonConfigurationException.class).hasMessageContaining("localSegment is required");
        assertThatThrownBy(() -> DistributedRingCommandBus.builder().initialHosts(List.of("127.0.0.1")))
                .isInstanceOf(AxonConfigurationException.class)
                .hasMessageContaining("initialHosts entry must be host:port, but was [127.0.0.1]");
        assertThatThrownBy(() -> DistributedRingCommandBus.builder().bind("127.0.0.1", 70000))
                .isInstanceOf(AxonConfigurationException.class).hasMessageContaining("bind port");
        assertThatThrownBy(() -> DistributedRingCommandBus.builder().leaveGracePeriod(Duration.ZERO))
                .isInstanceOf(AxonConfigurationException.class).hasMessageContaining("leaveGracePeriod");
        assertThatThrownBy(() -> DistributedRingCommandBus.builder().loadFactor(0))
                .isInstanceOf(AxonConfigurationException.class).hasMessageContaining("loadFactor");
    }
}
