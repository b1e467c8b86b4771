package io.github.ringbus.spring;

import org.springframework.boot.context.properties.ConfigurationProperties;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code ringbus.distributed.*} properties: ringbus as the local segment of Axon's {@code DistributedCommandBus}
 * over Axon's JGroups connector ({@link io.github.ringbus.distributed.DistributedRingCommandBus}). Read only when the
 * connector ({@code axon-jgroups}) is on the class path; {@code ringbus.distributed.enabled=true} switches it on.
 * Each value is checked by the bus's builder when the application starts, which fails naming the setting.
 */
@ConfigurationProperties(prefix = RingbusDistributedProperties.PREFIX)
public class RingbusDistributedProperties {

    /** The prefix of these properties. */
    public static final String PREFIX = "ringbus.distributed";

    /** Whether this node joins others (default false: the ring is the application's command bus). */
    private boolean enabled;
    /** The name of the cluster the nodes join. */
    private String clusterName = "ringbus";
    /** This node's name in the view (default: one JGroups makes up). */
    private String nodeName;
    /** The address JGroups listens on (TCP). */
    private String bindAddress = "127.0.0.1";
    /** The port JGroups listens on (TCP). */
    private int bindPort = 7800;
    /** The nodes to look for when joining, each host:port (JGroups TCPPING); this node may be among them. */
    private List<String> initialHosts = new ArrayList<>();
    /** This node's share of the routing keys relative to the others'. */
    private int loadFactor = 100;
    /** How long start waits for the node to join. */
    private Duration joinTimeout = Duration.ofSeconds(30);
    /** How long shutdown waits, after the node announced that it takes no more commands, before the ring drains. */
    private Duration leaveGracePeriod = Duration.ofSeconds(1);
    /** How long a node that stopped answering stays in the view (a killed one is seen at once). */
    private Duration failureDetectionTimeout = Duration.ofSeconds(3);
    /**
     * A secret every node is given (at least 16 characters): a node admits only nodes that know it, and every message
     * between nodes is encrypted with a key derived from it. Required when bind-address is not a loopback address,
     * unless allow-unauthenticated is true. Keep it out of the application's code: an environment variable
     * (RINGBUS_DISTRIBUTED_SHARED_SECRET) or a secret store.
     */
    private String sharedSecret;
    /**
     * Lets a node bind to a network address without a shared secret: any host that reaches its port can then join,
     * receive commands and send them. Only on a network where every host is trusted.
     */
    private boolean allowUnauthenticated;

    public boolean isEnabled() {
        return enabled;
    }

    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    public String getClusterName() {
        return clusterName;
    }

    public void setClusterName(String clusterName) {
        this.clusterName = clusterName;
    }

    public String getNodeName() {
        return nodeName;
    }

    public void setNodeName(String nodeName) {
        this.nodeName = nodeName;
    }

    public String getBindAddress() {
        return bindAddress;
    }

    public void setBindAddress(String bindAddress) {
        this.bindAddress = bindAddress;
    }

    public int getBindPort() {
        return bindPort;
    }

    public void setBindPort(int bindPort) {
        this.bindPort = bindPort;
    }

    public List<String> getInitialHosts() {
        return initialHosts;
    }

    public void setInitialHosts(List<String> initialHosts) {
        this.initialHosts = initialHosts;
    }

    public int getLoadFactor() {
        return loadFactor;
    }

    public void setLoadFactor(int loadFactor) {
        this.loadFactor = loadFactor;
    }

    public Duration getJoinTimeout() {
        return joinTimeout;
    }

    public void setJoinTimeout(Duration joinTimeout) {
        this.joinTimeout = joinTimeout;
    }

    public Duration getLeaveGracePeriod() {
        return leaveGracePeriod;
    }

    public void setLeaveGracePeriod(Duration leaveGracePeriod) {
        this.leaveGracePeriod = leaveGracePeriod;
    }

    public Duration getFailureDetectionTimeout() {
        return failureDetectionTimeout;
    }

    public void setFailureDetectionTimeout(Duration failureDetectionTimeout) {
        this.failureDetectionTimeout = failureDetectionTimeout;
    }

    public String getSharedSecret() {
        return sharedSecret;
    }

    public void setSharedSecret(String sharedSecret) {
        this.sharedSecret = sharedSecret;
    }

    public boolean isAllowUnauthenticated() {
        return allowUnauthenticated;
    }

    public void setAllowUnauthenticated(boolean allowUnauthenticated) {
        this.allowUnauthenticated = allowUnauthenticated;
    }
}
