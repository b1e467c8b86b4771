package io.github.ringbus.spring;

import io.github.ringbus.RingCommandBus;
import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.PublishMode;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import org.axonframework.common.AxonConfigurationException;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.validation.Errors;
import org.springframework.validation.Validator;

import java.time.Duration;
import java.util.function.BiConsumer;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code ringbus.*} properties: one for each setting of {@link RingCommandBus.Builder} that a property can
 * express, plus the switches of the Spring Boot support.
 * <p>
 * The values are checked while they are bound, by the builder's own setters: an invalid value stops the application
 * at start-up with a message that names the property, e.g.
 * {@code ringbus.ring-size must be a power of two of at least 2, but was 1000}.
 */
@ConfigurationProperties(prefix = RingbusProperties.PREFIX)
public class RingbusProperties implements Validator {

    /** The prefix of every ringbus property. */
    public static final String PREFIX = "ringbus";

    /**
     * Whether ringbus's RingCommandBus is the application's local command bus. Set to false to get Axon's default
     * command bus and event store back.
     */
    private boolean enabled = true;

    /** The number of slots in the ring: a power of two, at least 2. */
    private Integer ringSize;

    /**
     * The number of handler threads, each owning a disjoint set of aggregates (1 to 256). Default: a quarter of the
     * available processors, at least 1.
     */
    private Integer handlerThreads;

    /**
     * The number of store threads (1 to 64), each storing, publishing and completing the commands of its share of
     * the aggregates in transactions of its own (so each holds a database connection while it stores). Default: a
     * quarter of the available processors, at least 1, when events go to a database; 1 on Axon's in-memory engine or
     * without a transaction manager.
     */
    private Integer storeThreads;

    /**
     * How many threads run the stages: FULL (one per stage) or COMPACT (two; needs handler-threads and store-threads
     * of 1). Default: COMPACT on machines of up to 4 cores with one handler thread and one store thread, else FULL.
     */
    private Topology topology;

    /** How the stage threads wait for work: ADAPTIVE, BLOCKING, SLEEPING, YIELDING or BUSY_SPIN. */
    private WaitStrategyChoice waitStrategy;

    /**
     * What a dispatch does when every slot of the ring is taken: BLOCK (wait for a slot), BLOCK_WITH_TIMEOUT (wait
     * up to full-ring-timeout, then fail the command) or FAIL_FAST (fail the command at once).
     */
    private FullRingPolicy fullRingPolicy;

    /** How long the BLOCK_WITH_TIMEOUT full-ring policy waits for a free slot. Positive. */
    private Duration fullRingTimeout;

    /**
     * When events reach subscribing event processors: IN_TRANSACTION (in the store stage's transaction, before its
     * commit; a subscriber that throws fails its command and nothing of it is stored, as on Axon's own buses),
     * PARALLEL (while the store stage appends them; their events stay stored) or AFTER_STORE (once they are stored).
     */
    private PublishMode publishMode;

    /** The most aggregates of each type kept in memory. Positive. */
    private Integer cacheSize;

    /**
     * How many aggregates missing from the cache may be read from the event store at once, ahead of their commands
     * (each read takes a database connection while it runs). 0 to 64; 0 reads each on the preload stage's thread.
     * Default: four per core, at least 16 and at most 64, more with a database far away (see database-latency), and
     * at most half the application's connection pool (read from its {@code DataSource}: HikariCP, Commons DBCP 2 or
     * Tomcat JDBC).
     */
    private Integer readAheadThreads;

    /**
     * The round trip between the application and its database, e.g. 800us or 2ms: the default read-ahead threads
     * read as many missing aggregates at once as this machine's cores keep up with at that round trip (up to 64, and
     * half the pool). 0 to 10 s. Default: measured at start-up on the application's {@code DataSource} (the fastest of
     * ten validations of one connection, at most 2 s spent); not known without one.
     */
    private Duration databaseLatency;

    /** The most events the store stage appends in one call and transaction. Positive. */
    private Integer maxStoreBatchEvents;

    /**
     * Whether Axon's JPA event store, where Spring Boot configures it with Hibernate on PostgreSQL, appends each batch
     * of events in one statement (PostgresJpaEventStorageEngine: the same rows, large objects made on the server);
     * false: Axon's own JPA engine, one INSERT per event (and, on oid columns, several round trips per value).
     */
    private boolean jpaBulkAppend = true;

    /**
     * How long closing the application context waits for the commands in flight to complete. Positive; commands
     * still in flight then fail with a ShutdownInProgressException.
     */
    private Duration shutdownTimeout;

    /** The prefix of the names of the stage threads, e.g. ringbus-handle-0. Not blank. */
    private String threadNamePrefix;

    private final Metrics metrics = new Metrics();
    private final Health health = new Health();

    private final Tracing tracing = new Tracing();

    /**
     * Applies these settings to a builder.
     *
     * @param builder the builder of the bus
     * @return the builder
     * @throws InvalidRingbusPropertyException when a value is invalid, naming its property
     */
    public RingCommandBus.Builder applyTo(RingCommandBus.Builder builder) {
        forEachSetting(new SettingVisitor() {
            @Override
            <T> void visitSet(String property, String field, T value, BiConsumer<RingCommandBus.Builder, T> setter) {
                try {
                    setter.accept(builder, value);
                } catch (AxonConfigurationException e) {
                    throw new InvalidRingbusPropertyException(PREFIX + "." + property, field, value, e);
                }
            }
        });
        return builder;
    }

    /**
     * Checks each bound value with {@link RingCommandBus.Builder}'s own setter, so that start-up fails on a bad one
     * with a message naming its property. Spring Boot calls this while binding, because this class is a
     * {@link Validator}.
     */
    @Override
    public void validate(Object target, Errors errors) {
        RingbusProperties properties = (RingbusProperties) target;
        properties.forEachSetting(new SettingVisitor() {
            @Override
            <T> void visitSet(String property, String field, T value, BiConsumer<RingCommandBus.Builder, T> setter) {
                try {
                    setter.accept(RingCommandBus.builder(), value);
                } catch (AxonConfigurationException e) {
                    errors.rejectValue(field, "ringbus.invalid",
                                       InvalidRingbusPropertyException.describe(PREFIX + "." + property, field, e));
                }
            }
        });
    }

    @Override
    public boolean supports(Class<?> type) {
        return RingbusProperties.class.isAssignableFrom(type);
    }

    /**
     * Says a refusal of {@link RingCommandBus.Builder} in the terms of these properties: each builder setting it names
     * becomes its property ({@code handlerThreads(1)} becomes {@code ringbus.handler-threads=1}, {@code topology FULL}
     * becomes {@code ringbus.topology=FULL}, {@code storeThreads} becomes {@code ringbus.store-threads}).
     *
     * @param builderMessage the builder's message
     * @return the message in property terms
     */
    static String inPropertyTerms(String builderMessage) {
        String message = String.valueOf(builderMessage);
        if (message.startsWith("RingCommandBus: ")) {
            message = message.substring("RingCommandBus: ".length());
        }
        Map<String, String> properties = new LinkedHashMap<>();
        new RingbusProperties().forEachSetting(new SettingVisitor() {
            @Override
            <T> void visit(String property, String field, T value, BiConsumer<RingCommandBus.Builder, T> setter) {
                properties.put(field, PREFIX + "." + property);
            }

            @Override
            <T> void visitSet(String property, String field, T value, BiConsumer<RingCommandBus.Builder, T> setter) {
            }
        });
        for (Map.Entry<String, String> setting : properties.entrySet()) {
            String field = Pattern.quote(setting.getKey());
            String property = Matcher.quoteReplacement(setting.getValue());
            // Not inside a property already written out (ringbus.topology holds the setting topology).
            String named = "(?<![\\w.-])" + field;
            message = message.replaceAll(named + "\\(([^)]*)\\)", property + "=$1")
                             .replaceAll(named + " ([A-Z][A-Z_]+)\\b", property + "=$1")
                             .replaceAll(named + "\\b", property);
        }
        return message;
    }

    /** Visits the settings the user set; the builder's defaults stand for the others. */
    private void forEachSetting(SettingVisitor visitor) {
        visitor.visit("ring-size", "ringSize", ringSize, RingCommandBus.Builder::ringSize);
        visitor.visit("handler-threads", "handlerThreads", handlerThreads, RingCommandBus.Builder::handlerThreads);
        visitor.visit("store-threads", "storeThreads", storeThreads, RingCommandBus.Builder::storeThreads);
        visitor.visit("topology", "topology", topology, RingCommandBus.Builder::topology);
        visitor.visit("wait-strategy", "waitStrategy", waitStrategy, RingCommandBus.Builder::waitStrategy);
        visitor.visit("full-ring-policy", "fullRingPolicy", fullRingPolicy, RingCommandBus.Builder::fullRingPolicy);
        visitor.visit("full-ring-timeout", "fullRingTimeout", fullRingTimeout,
                      RingCommandBus.Builder::fullRingTimeout);
        visitor.visit("publish-mode", "publishMode", publishMode, RingCommandBus.Builder::publishMode);
        visitor.visit("cache-size", "cacheSize", cacheSize, RingCommandBus.Builder::cacheSize);
        visitor.visit("read-ahead-threads", "readAheadThreads", readAheadThreads,
                      RingCommandBus.Builder::readAheadThreads);
        visitor.visit("database-latency", "databaseLatency", databaseLatency,
                      RingCommandBus.Builder::databaseLatency);
        visitor.visit("max-store-batch-events", "maxStoreBatchEvents", maxStoreBatchEvents,
                      RingCommandBus.Builder::maxStoreBatchEvents);
        visitor.visit("shutdown-timeout", "shutdownTimeout", shutdownTimeout,
                      RingCommandBus.Builder::shutdownTimeout);
        visitor.visit("thread-name-prefix", "threadNamePrefix", threadNamePrefix,
                      RingCommandBus.Builder::threadNamePrefix);
    }

    private abstract static class SettingVisitor {

        /** Visits a setting the user set; one left unset (null) keeps the builder's default. */
        <T> void visit(String property, String field, T value, BiConsumer<RingCommandBus.Builder, T> setter) {
            if (value != null) {
                visitSet(property, field, value, setter);
            }
        }

        abstract <T> void visitSet(String property, String field, T value,
                                   BiConsumer<RingCommandBus.Builder, T> setter);
    }

    /** @return the database's round trip as stated, or null to measure it at start-up */
    public Duration getDatabaseLatency() {
        return databaseLatency;
    }

    /** @param databaseLatency the database's round trip; null to measure it at start-up */
    public void setDatabaseLatency(Duration databaseLatency) {
        this.databaseLatency = databaseLatency;
    }

    /** @return the topology, or null for the automatic choice */
    public Topology getTopology() {
        return topology;
    }

    /** @param topology FULL or COMPACT; null for the automatic choice */
    public void setTopology(Topology topology) {
        this.topology = topology;
    }

    /** @return whether the ringbus auto-configuration is on */
    public boolean isEnabled() {
        return enabled;
    }

    /** @param enabled whether the ringbus auto-configuration is on */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** @return the number of slots in the ring, or null when not set (the builder\'s default applies) */
    public Integer getRingSize() {
        return ringSize;
    }

    /** @param ringSize the number of slots in the ring */
    public void setRingSize(Integer ringSize) {
        this.ringSize = ringSize;
    }

    /** @return the number of handler threads, or null for the default */
    public Integer getHandlerThreads() {
        return handlerThreads;
    }

    /** @param handlerThreads the number of handler threads, or null for the default */
    public void setHandlerThreads(Integer handlerThreads) {
        this.handlerThreads = handlerThreads;
    }

    /** @return the number of store threads, or null for the default */
    public Integer getStoreThreads() {
        return storeThreads;
    }

    /** @param storeThreads the number of store threads, or null for the default */
    public void setStoreThreads(Integer storeThreads) {
        this.storeThreads = storeThreads;
    }

    /** @return how the stage threads wait for work, or null when not set (the builder\'s default applies) */
    public WaitStrategyChoice getWaitStrategy() {
        return waitStrategy;
    }

    /** @param waitStrategy how the stage threads wait for work */
    public void setWaitStrategy(WaitStrategyChoice waitStrategy) {
        this.waitStrategy = waitStrategy;
    }

    /** @return what a dispatch does when the ring is full, or null when not set (the builder\'s default applies) */
    public FullRingPolicy getFullRingPolicy() {
        return fullRingPolicy;
    }

    /** @param fullRingPolicy what a dispatch does when the ring is full */
    public void setFullRingPolicy(FullRingPolicy fullRingPolicy) {
        this.fullRingPolicy = fullRingPolicy;
    }

    /** @return how long BLOCK_WITH_TIMEOUT waits for a slot, or null when not set (the builder\'s default applies) */
    public Duration getFullRingTimeout() {
        return fullRingTimeout;
    }

    /** @param fullRingTimeout how long BLOCK_WITH_TIMEOUT waits for a slot */
    public void setFullRingTimeout(Duration fullRingTimeout) {
        this.fullRingTimeout = fullRingTimeout;
    }

    /** @return when events reach subscribers relative to the store, or null when not set (the builder\'s default applies) */
    public PublishMode getPublishMode() {
        return publishMode;
    }

    /** @param publishMode when events reach subscribers relative to the store */
    public void setPublishMode(PublishMode publishMode) {
        this.publishMode = publishMode;
    }

    /** @return the most aggregates of each type kept in memory, or null when not set (the builder\'s default applies) */
    public Integer getCacheSize() {
        return cacheSize;
    }

    /** @param cacheSize the most aggregates of each type kept in memory */
    public void setCacheSize(Integer cacheSize) {
        this.cacheSize = cacheSize;
    }

    /** @return how many missing aggregates may be read ahead at once, or null for the default */
    public Integer getReadAheadThreads() {
        return readAheadThreads;
    }

    /** @param readAheadThreads how many missing aggregates may be read ahead at once (0 to 64) */
    public void setReadAheadThreads(Integer readAheadThreads) {
        this.readAheadThreads = readAheadThreads;
    }

    /** @return whether Axon's JPA engine on PostgreSQL appends each batch in one statement */
    public boolean isJpaBulkAppend() {
        return jpaBulkAppend;
    }

    /** @param jpaBulkAppend false for Axon's own JPA engine, one INSERT per event */
    public void setJpaBulkAppend(boolean jpaBulkAppend) {
        this.jpaBulkAppend = jpaBulkAppend;
    }

    /** @return the most events appended in one store call, or null when not set (the builder\'s default applies) */
    public Integer getMaxStoreBatchEvents() {
        return maxStoreBatchEvents;
    }

    /** @param maxStoreBatchEvents the most events appended in one store call */
    public void setMaxStoreBatchEvents(Integer maxStoreBatchEvents) {
        this.maxStoreBatchEvents = maxStoreBatchEvents;
    }

    /** @return how long shutdown waits for commands in flight, or null when not set (the builder\'s default applies) */
    public Duration getShutdownTimeout() {
        return shutdownTimeout;
    }

    /** @param shutdownTimeout how long shutdown waits for commands in flight */
    public void setShutdownTimeout(Duration shutdownTimeout) {
        this.shutdownTimeout = shutdownTimeout;
    }

    /** @return the prefix of the stage threads' names, or null when not set (the builder\'s default applies) */
    public String getThreadNamePrefix() {
        return threadNamePrefix;
    }

    /** @param threadNamePrefix the prefix of the stage threads' names */
    public void setThreadNamePrefix(String threadNamePrefix) {
        this.threadNamePrefix = threadNamePrefix;
    }

    /** @return the Micrometer settings */
    public Metrics getMetrics() {
        return metrics;
    }

    /** @return the health indicator's settings */
    public Health getHealth() {
        return health;
    }

    /** @return the tracing settings */
    public Tracing getTracing() {
        return tracing;
    }

    /** The {@code ringbus.metrics.*} properties. */
    public static class Metrics {

        /**
         * Whether the bus records Micrometer metrics (ringbus.commands, ringbus.stage.latency, ...) in the
         * application's MeterRegistry, when Micrometer and a MeterRegistry bean are present.
         */
        private boolean enabled = true;

        /** @return whether metrics are recorded */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether metrics are recorded */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** The {@code ringbus.health.*} properties (Spring Boot Actuator's health indicator). */
    public static class Health {

        /**
         * How long every store attempt must have failed (or one attempt waited for the store) before the health
         * indicator reports the ring DOWN: an outage, not one refused command. Seconds, so that readiness follows the
         * store while a load balancer can still act on it.
         */
        private Duration storeFailureWindow = Duration.ofSeconds(5);

        /** @return how long the store must fail before the ring is reported DOWN */
        public Duration getStoreFailureWindow() {
            return storeFailureWindow;
        }

        /** @param storeFailureWindow how long the store must fail before the ring is reported DOWN */
        public void setStoreFailureWindow(Duration storeFailureWindow) {
            this.storeFailureWindow = storeFailureWindow;
        }
    }

    /** The {@code ringbus.tracing.*} properties. */
    public static class Tracing {

        /**
         * Whether the bus creates Axon's dispatch and handle spans through the application's CommandBusSpanFactory.
         * Axon's default no-op SpanFactory is never called, so tracing costs nothing until a tracer is configured.
         */
        private boolean enabled = true;

        /** @return whether spans are created */
        public boolean isEnabled() {
            return enabled;
        }

        /** @param enabled whether spans are created */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }
}
