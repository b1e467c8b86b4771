package io.github.ringbus.distributed;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RunOnce;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.distributed.AnnotationRoutingStrategy;
import org.axonframework.commandhandling.distributed.ConsistentHash;
import org.axonframework.commandhandling.distributed.DistributedCommandBus;
import org.axonframework.commandhandling.distributed.RoutingStrategy;
import org.axonframework.common.AxonConfigurationException;
import org.axonframework.common.Registration;
import org.axonframework.extensions.jgroups.commandhandling.JGroupsConnector;
import org.axonframework.lifecycle.Lifecycle;
import org.axonframework.lifecycle.Phase;
import org.axonframework.messaging.Distributed;
import org.axonframework.messaging.MessageDispatchInterceptor;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MessageHandlerInterceptor;
import org.axonframework.serialization.Serializer;
import org.axonframework.commandhandling.callbacks.LoggingCallback;
import org.jgroups.Address;
import org.jgroups.JChannel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A node of several: Axon's {@link DistributedCommandBus} over Axon's {@link JGroupsConnector}, with a
 * {@link RingCommandBus} as its local segment. Every command goes to the node that owns its routing key (by default
 * the {@code @TargetAggregateIdentifier}, through Axon's consistent hash), so each aggregate's commands run on one
 * node's ring at a time while the membership is stable. A command of this node's own share goes straight to the
 * ring (the local short-cut; {@link Builder#localShortcut(boolean)}); the others are serialized and sent over JGroups.
 * Dispatch interceptors run on the dispatching node, before routing.
 * <p>
 * <b>Lifecycle</b> (Axon's phases; registering this bus registers the ring's handlers too):
 * <ol>
 *   <li>start: the ring starts, the aggregates' handlers subscribe, and only then the node joins (the JGroups channel
 *   connects and the node announces its load factor and the commands it handles); start fails when it has not joined
 *   within the join timeout;</li>
 *   <li>shutdown: the node first announces that it takes no more commands (the other nodes route its share to
 *   themselves), waits the leave grace period for the commands already on their way to it, then the ring drains
 *   (every command it accepted completes and its reply is sent), outbound commands waiting for replies finish, and
 *   only then the node leaves the JGroups view.</li>
 * </ol>
 * <b>Ownership.</b> Whenever the consistent hash changes (a node joined, left, was killed or stopped taking
 * commands), the ring is told to read each aggregate from the store again before its next command
 * ({@link RingCommandBus#evictCachedAggregates()}): a node that takes an aggregate over never acts on a copy cached
 * before another node changed it. While the nodes' views differ for a moment, two nodes may handle one aggregate;
 * the event store's unique key (aggregate identifier, sequence number) refuses the second append and that command
 * fails (a {@code ConcurrencyException}, which a gateway's {@code RetryScheduler} retries).
 * <p>
 * <b>Failures.</b> A command sent to a node that dies before it replied fails with Axon's
 * {@code CommandBusConnectorCommunicationException} once JGroups has removed the node from the view: its events may
 * or may not have been stored. Dispatch is thread-safe; callbacks of remote commands run on JGroups' threads.
 */
public final class DistributedRingCommandBus implements CommandBus, Distributed<CommandBus>, Lifecycle {

    private static final Logger logger = LoggerFactory.getLogger(DistributedRingCommandBus.class);

    private final RingCommandBus ring;
    private final JChannel channel;
    private final JGroupsConnector connector;
    private final DistributedCommandBus bus;
    private final boolean localShortcut;
    private final List<MessageDispatchInterceptor<? super CommandMessage<?>>> dispatchInterceptors =
            new CopyOnWriteArrayList<>();
    private final int loadFactor;
    private final Duration joinTimeout;
    private final Duration leaveGracePeriod;
    private volatile ConsistentHash consistentHash = new ConsistentHash();
    private volatile boolean joined;
    /** Set once the node announced that it takes no more commands. */
    private volatile boolean leaving;

    private DistributedRingCommandBus(Builder builder) {
        this.ring = builder.localSegment;
        this.channel = builder.channel != null ? builder.channel : JGroupsChannels.tcp(builder.tcp());
        this.loadFactor = builder.loadFactor;
        this.localShortcut = builder.localShortcut;
        this.joinTimeout = builder.joinTimeout;
        this.leaveGracePeriod = builder.leaveGracePeriod;
        if (builder.nodeName != null) {
            channel.setName(builder.nodeName);
        }
        this.connector = JGroupsConnector.builder()
                                         .localSegment(ring)
                                         .channel(channel)
                                         .clusterName(builder.clusterName)
                                         .serializer(builder.serializer)
                                         .routingStrategy(builder.routingStrategy)
                                         .consistentHashChangeListener(this::consistentHashChanged)
                                         .build();
        this.bus = DistributedCommandBus.builder().commandRouter(connector).connector(connector).build();
        bus.updateLoadFactor(loadFactor);
    }

    /**
     * @return a builder; the local segment and the serializer are required
     */
    public static Builder builder() {
        return new Builder();
    }

    private void consistentHashChanged(ConsistentHash changed) {
        ConsistentHash previous = consistentHash;
        consistentHash = changed;
        if (!changed.equals(previous)) {
            logger.info("The nodes' consistent hash changed ({} members): cached aggregates are read from the store "
                                + "again before their next command", changed.getMembers().size());
            ring.evictCachedAggregates();
        }
    }

    // --- CommandBus ------------------------------------------------------------------------------------------------

    @Override
    public <C> void dispatch(CommandMessage<C> command) {
        dispatch(command, LoggingCallback.INSTANCE);
    }

    /**
     * Sends the command to the node that owns its routing key; with the local short-cut (the default), a command of
     * this node's own share goes straight to the ring, neither serialized nor through JGroups.
     */
    @Override
    @SuppressWarnings("unchecked")
    public <C, R> void dispatch(CommandMessage<C> command, CommandCallback<? super C, ? super R> callback) {
        Objects.requireNonNull(command, "DistributedRingCommandBus.dispatch: the command must not be null");
        Objects.requireNonNull(callback, "DistributedRingCommandBus.dispatch: the callback must not be null");
        CommandMessage<C> intercepted = command;
        for (MessageDispatchInterceptor<? super CommandMessage<?>> interceptor : dispatchInterceptors) {
            intercepted = (CommandMessage<C>) interceptor.handle(intercepted);
        }
        if (localShortcut && isOwnedHere(intercepted)) {
            ring.dispatch(intercepted, callback);
        } else {
            // Sent from a command's handler, it leaves this node: that command must not be handled a second time.
            RunOnce.markCurrentUnitOfWork();
            bus.dispatch(intercepted, callback);
        }
    }

    /**
     * @param command a command
     * @return true when this node owns the command's routing key in its current consistent hash (the command would
     * run on this node's ring); any thread
     */
    public boolean isOwnedHere(CommandMessage<?> command) {
        Address self = channel.getAddress();
        return self != null && connector.findDestination(command)
                                        .flatMap(member -> member.getConnectionEndpoint(Address.class))
                                        .map(self::equals)
                                        .orElse(false);
    }

    /**
     * Subscribes the handler on the ring and announces the command to the other nodes. Cancelling the subscription
     * announces it too, except once the node has stopped taking commands (shutdown): the other nodes already route
     * nothing to it, and an announcement sent just before the node leaves could reach a node after the view without
     * it, which would then keep a member that no longer exists.
     */
    @Override
    public Registration subscribe(String commandName, MessageHandler<? super CommandMessage<?>> handler) {
        Registration registration = bus.subscribe(commandName, handler);
        return () -> leaving || registration.cancel();
    }

    @Override
    public Registration registerHandlerInterceptor(
            MessageHandlerInterceptor<? super CommandMessage<?>> handlerInterceptor) {
        return bus.registerHandlerInterceptor(handlerInterceptor);
    }

    /** Applied on the dispatching node, before the command is routed. */
    @Override
    public Registration registerDispatchInterceptor(
            MessageDispatchInterceptor<? super CommandMessage<?>> dispatchInterceptor) {
        dispatchInterceptors.add(dispatchInterceptor);
        return () -> dispatchInterceptors.remove(dispatchInterceptor);
    }

    /**
     * @return the ring this node runs its share of the commands on
     */
    @Override
    public RingCommandBus localSegment() {
        return ring;
    }

    /**
     * @return the consistent hash this node routes by: the nodes, their load factors and the commands each takes
     */
    public ConsistentHash consistentHash() {
        return consistentHash;
    }

    /**
     * @return this node's name in the JGroups view
     */
    public String nodeName() {
        return channel.getName();
    }

    /**
     * @return true between {@link #join()} and {@link #leave()}
     */
    public boolean isJoined() {
        return joined;
    }

    // --- lifecycle -------------------------------------------------------------------------------------------------

    @Override
    public void registerLifecycleHandlers(LifecycleRegistry lifecycle) {
        ring.registerLifecycleHandlers(lifecycle);
        // Not the distributed bus's own handlers: it would announce a second time that the node takes no more
        // commands, just before the node leaves, and a node that receives that announcement after the view without
        // the node would keep it in its consistent hash (JGroupsConnector handles the two on different threads).
        // After the ring started (LOCAL_MESSAGE_HANDLER_REGISTRATIONS - 1) and the handlers subscribed.
        lifecycle.onStart(Phase.INBOUND_COMMAND_CONNECTOR, this::join);
        // Before the ring drains (OUTBOUND_COMMAND_CONNECTORS + 1): other nodes stop routing commands here first.
        lifecycle.onShutdown(Phase.INBOUND_EVENT_CONNECTORS + 2, this::stopTakingCommands);
        // After the ring drained: the commands this node sent to others finish (as the distributed bus's own handler).
        lifecycle.onShutdown(Phase.OUTBOUND_COMMAND_CONNECTORS, bus::shutdownDispatching);
        // Then the node leaves the view.
        lifecycle.onShutdown(Phase.OUTBOUND_COMMAND_CONNECTORS - 1, this::leave);
    }

    /**
     * Joins the nodes: connects the JGroups channel and announces this node's load factor and commands. Called by
     * Axon's lifecycle after the ring started; does nothing when joined.
     *
     * @throws IllegalStateException when the ring is not running, or the node did not join within the join timeout
     */
    public synchronized void join() {
        if (joined) {
            return;
        }
        if (!ring.isRunning()) {
            throw new IllegalStateException(
                    "DistributedRingCommandBus: the ring must be started before the node joins; start it first (Axon's "
                            + "lifecycle does when this bus is the configuration's command bus)");
        }
        try {
            connector.connect();
            if (!connector.awaitJoined(joinTimeout.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("DistributedRingCommandBus: node [" + channel.getName()
                                                        + "] did not join cluster [" + channel.getClusterName()
                                                        + "] within " + joinTimeout);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("DistributedRingCommandBus: interrupted while joining", e);
        } catch (RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("DistributedRingCommandBus: node could not join the cluster: " + e, e);
        }
        joined = true;
        logger.info("Node [{}] joined cluster [{}] with load factor {}", channel.getName(), channel.getClusterName(),
                    loadFactor);
    }

    /**
     * Announces that this node takes no more commands and waits the leave grace period, so that the commands other
     * nodes sent before they heard it reach the ring before it drains. The node stays in the view, so replies still
     * reach the senders. Shutdown's first step.
     */
    void stopTakingCommands() {
        if (!joined) {
            return;
        }
        leaving = true;
        bus.disconnect();
        try {
            Thread.sleep(leaveGracePeriod.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * Leaves the JGroups view and closes the channel. Shutdown's last step, after the ring drained; does nothing when
     * not joined.
     */
    public synchronized void leave() {
        if (!joined) {
            channel.close();
            return;
        }
        joined = false;
        connector.disconnect();
        channel.close();
        logger.info("Node [{}] left", channel.getName());
    }

    /**
     * The settings of a {@link DistributedRingCommandBus}; every setter checks its value at once and throws an
     * {@link AxonConfigurationException} naming the setting. By default the node uses JGroups over TCP with a static
     * list of nodes ({@code TCPPING}); {@link #channel(JChannel)} replaces that with any JGroups channel (DNS or
     * cloud discovery, a JGroups XML configuration).
     */
    public static final class Builder {

        private RingCommandBus localSegment;
        private Serializer serializer;
        private String clusterName = "ringbus";
        private String nodeName;
        private String bindAddress = "127.0.0.1";
        private int bindPort = 7800;
        private final List<InetSocketAddress> initialHosts = new ArrayList<>();
        private JChannel channel;
        private int loadFactor = DistributedCommandBus.INITIAL_LOAD_FACTOR;
        private RoutingStrategy routingStrategy = new AnnotationRoutingStrategy();
        private Duration joinTimeout = Duration.ofSeconds(30);
        private Duration leaveGracePeriod = Duration.ofSeconds(1);
        private Duration failureDetectionTimeout = Duration.ofSeconds(3);
        private boolean localShortcut = true;
        private String sharedSecret;
        private boolean allowUnauthenticated;

        private Builder() {
        }

        /**
         * Whether a command of this node's own share goes straight to the ring (default true), or is serialized and
         * sent through JGroups to this node like any other (as Axon's {@code DistributedCommandBus} does).
         */
        public Builder localShortcut(boolean localShortcut) {
            this.localShortcut = localShortcut;
            return this;
        }

        /** The ring this node runs its share of the commands on. Required. */
        public Builder localSegment(RingCommandBus localSegment) {
            this.localSegment = require(localSegment, "localSegment");
            return this;
        }

        /** Serializes the commands and results sent between nodes. Required (e.g. Axon's message serializer). */
        public Builder serializer(Serializer serializer) {
            this.serializer = require(serializer, "serializer");
            return this;
        }

        /** The name of the cluster the nodes join. Default "ringbus". */
        public Builder clusterName(String clusterName) {
            require(clusterName, "clusterName");
            check(!clusterName.isBlank(), "clusterName must not be blank");
            this.clusterName = clusterName;
            return this;
        }

        /** This node's name in the view. Default: one JGroups makes up. */
        public Builder nodeName(String nodeName) {
            require(nodeName, "nodeName");
            check(!nodeName.isBlank(), "nodeName must not be blank");
            this.nodeName = nodeName;
            return this;
        }

        /** The address and port JGroups listens on (TCP). Default 127.0.0.1:7800. */
        public Builder bind(String address, int port) {
            require(address, "bind address");
            check(!address.isBlank(), "bind address must not be blank");
            checkPort(port, "bind port");
            this.bindAddress = address;
            this.bindPort = port;
            return this;
        }

        /**
         * The nodes to look for when joining (JGroups {@code TCPPING}), each as {@code host:port}; this node may be
         * among them. Default: this node alone, which others find when they list it.
         */
        public Builder initialHosts(List<String> hosts) {
            require(hosts, "initialHosts");
            initialHosts.clear();
            for (String host : hosts) {
                initialHosts.add(parseHost(host));
            }
            return this;
        }

        /**
         * A secret that every node of the cluster is given, at least 16 characters. With it, a node admits only nodes
         * that know it (JGroups {@code AUTH} with a token derived from it) and every message between nodes (commands,
         * results, membership) is encrypted with an AES key derived from it (JGroups {@code SYM_ENCRYPT}): a host
         * without it can neither join nor read or send commands. Required when the node binds to an address other
         * than loopback, unless {@link #allowUnauthenticated(boolean)}. Ignored with {@link #channel(JChannel)}, whose
         * protocols are the application's.
         */
        public Builder sharedSecret(String sharedSecret) {
            require(sharedSecret, "sharedSecret");
            check(sharedSecret.length() >= 16, "sharedSecret must have at least 16 characters, but had "
                    + sharedSecret.length());
            this.sharedSecret = sharedSecret;
            return this;
        }

        /**
         * Lets a node bind to a network address without a {@link #sharedSecret}: any host that reaches its port can
         * then join the cluster, receive commands and send them. Only for a network where every host is trusted; a
         * warning says so at start-up. Default false.
         */
        public Builder allowUnauthenticated(boolean allowUnauthenticated) {
            this.allowUnauthenticated = allowUnauthenticated;
            return this;
        }

        /** A JGroups channel of the application's (not yet connected) in place of the TCP/TCPPING one. */
        public Builder channel(JChannel channel) {
            this.channel = require(channel, "channel");
            check(!channel.isConnected(), "channel must not be connected yet");
            return this;
        }

        /** This node's share of the routing keys relative to the others'. Positive; default 100 (Axon's). */
        public Builder loadFactor(int loadFactor) {
            check(loadFactor >= 1, "loadFactor must be positive, but was " + loadFactor);
            this.loadFactor = loadFactor;
            return this;
        }

        /** What a command is routed by. Default: Axon's {@code @RoutingKey} ({@code @TargetAggregateIdentifier}). */
        public Builder routingStrategy(RoutingStrategy routingStrategy) {
            this.routingStrategy = require(routingStrategy, "routingStrategy");
            return this;
        }

        /** How long start waits for the node to join. Positive; default 30 s. */
        public Builder joinTimeout(Duration joinTimeout) {
            this.joinTimeout = positive(joinTimeout, "joinTimeout");
            return this;
        }

        /**
         * How long shutdown waits, after announcing that the node takes no more commands, before the ring drains: the
         * time the other nodes need to hear it and the commands they sent before to arrive. Positive; default 1 s.
         */
        public Builder leaveGracePeriod(Duration leaveGracePeriod) {
            this.leaveGracePeriod = positive(leaveGracePeriod, "leaveGracePeriod");
            return this;
        }

        /**
         * How long a node that stopped answering (a hung process; a killed one is seen at once, its TCP connections
         * close) stays in the view. Positive; default 3 s.
         */
        public Builder failureDetectionTimeout(Duration failureDetectionTimeout) {
            this.failureDetectionTimeout = positive(failureDetectionTimeout, "failureDetectionTimeout");
            return this;
        }

        String bindAddress() {
            return bindAddress;
        }

        int bindPort() {
            return bindPort;
        }

        List<InetSocketAddress> initialHosts() {
            return initialHosts.isEmpty() ? List.of(new InetSocketAddress(bindAddress, bindPort)) : initialHosts;
        }

        Duration failureDetectionTimeout() {
            return failureDetectionTimeout;
        }

        String sharedSecret() {
            return sharedSecret;
        }

        /** @return what ringbus's own TCP channel is built from, these settings */
        JGroupsChannels.Tcp tcp() {
            return new JGroupsChannels.Tcp(bindAddress(), bindPort(), initialHosts(), failureDetectionTimeout(),
                                           sharedSecret(), clusterName());
        }

        String clusterName() {
            return clusterName;
        }

        /**
         * @return a node, not yet joined: Axon's lifecycle joins it once the ring started
         * @throws AxonConfigurationException when the local segment or the serializer is missing
         */
        public DistributedRingCommandBus build() {
            check(localSegment != null, "localSegment is required: the RingCommandBus this node runs commands on");
            check(serializer != null, "serializer is required: it serializes commands and results between nodes");
            if (channel == null && sharedSecret == null && !isLoopback(bindAddress)) {
                check(allowUnauthenticated, "binding to [" + bindAddress + "], a network address, without a "
                        + "sharedSecret lets any host that reaches port " + bindPort + " join the cluster, receive "
                        + "commands and send them: give every node the same sharedSecret (ringbus.distributed."
                        + "shared-secret), or allowUnauthenticated(true) (ringbus.distributed.allow-unauthenticated) "
                        + "on a network where every host is trusted");
                logger.warn("Node binds to [{}:{}] without a shared secret (allowUnauthenticated): any host that "
                                    + "reaches that port can join cluster [{}], receive commands and send them",
                            bindAddress, bindPort, clusterName);
            }
            return new DistributedRingCommandBus(this);
        }

        private static boolean isLoopback(String address) {
            try {
                return java.net.InetAddress.getByName(address).isLoopbackAddress();
            } catch (java.net.UnknownHostException e) {
                throw new AxonConfigurationException(
                        "DistributedRingCommandBus: bind address [" + address + "] is not a known host", e);
            }
        }

        private static InetSocketAddress parseHost(String host) {
            require(host, "initialHosts entry");
            int colon = host.lastIndexOf(':');
            check(colon > 0 && colon < host.length() - 1,
                  "initialHosts entry must be host:port, but was [" + host + "]");
            int port;
            try {
                port = Integer.parseInt(host.substring(colon + 1));
            } catch (NumberFormatException e) {
                throw new AxonConfigurationException(
                        "DistributedRingCommandBus: initialHosts entry must be host:port, but was [" + host + "]");
            }
            checkPort(port, "initialHosts port of [" + host + "]");
            return InetSocketAddress.createUnresolved(host.substring(0, colon), port);
        }

        private static void checkPort(int port, String setting) {
            check(port >= 1 && port <= 65535, setting + " must be between 1 and 65535, but was " + port);
        }

        private static Duration positive(Duration value, String setting) {
            require(value, setting);
            check(!value.isNegative() && !value.isZero(), setting + " must be positive, but was " + value);
            return value;
        }

        private static <T> T require(T value, String setting) {
            check(value != null, setting + " must not be null");
            return value;
        }

        private static void check(boolean condition, String message) {
            if (!condition) {
                throw new AxonConfigurationException("DistributedRingCommandBus: " + message);
            }
        }
    }

    @Override
    public String toString() {
        return "DistributedRingCommandBus[" + Objects.toString(channel.getName(), "unnamed") + "]";
    }
}
