package io.github.ringbus.spring;

import org.axonframework.common.AxonConfigurationException;

/**
 * A {@code ringbus.*} property has a value that {@link io.github.ringbus.RingCommandBus.Builder} refuses. The message
 * names the property, e.g. {@code ringbus.ring-size must be a power of two of at least 2, but was 1000}.
 */
public class InvalidRingbusPropertyException extends AxonConfigurationException {

    private static final long serialVersionUID = 1L;

    private static final String BUILDER_PREFIX = "RingCommandBus: ";

    private final String property;
    private final transient Object value;
    private final String setting;

    /**
     * @param property the property, e.g. {@code ringbus.ring-size}
     * @param setting  the builder setting the property sets, e.g. {@code ringSize}
     * @param value    the refused value
     * @param cause    the builder's refusal
     */
    public InvalidRingbusPropertyException(String property, String setting, Object value,
                                           AxonConfigurationException cause) {
        super(describe(property, setting, cause), cause);
        this.property = property;
        this.setting = setting;
        this.value = value;
    }

    /**
     * A combination of {@code ringbus.*} properties the builder refuses, each valid alone (say
     * {@code ringbus.topology=COMPACT} with {@code ringbus.handler-threads=2}).
     *
     * @param description the refusal in property terms (see {@code RingbusProperties.inPropertyTerms})
     * @param cause       the builder's refusal
     */
    public InvalidRingbusPropertyException(String description, AxonConfigurationException cause) {
        super(description, cause);
        this.property = null;
        this.setting = null;
        this.value = null;
    }

    /**
     * Rewrites the builder's message about a setting into one about the property.
     *
     * @param property the property, e.g. {@code ringbus.ring-size}
     * @param setting  the builder setting, e.g. {@code ringSize}
     * @param cause    the builder's refusal
     * @return e.g. {@code ringbus.ring-size must be a power of two of at least 2, but was 1000}
     */
    static String describe(String property, String setting, AxonConfigurationException cause) {
        String message = String.valueOf(cause.getMessage());
        if (message.startsWith(BUILDER_PREFIX)) {
            message = message.substring(BUILDER_PREFIX.length());
        }
        if (message.startsWith(setting + " ")) {
            return property + message.substring(setting.length());
        }
        return property + ": " + message;
    }

    /** @return the property, e.g. {@code ringbus.ring-size}; null for a combination of properties */
    public String getProperty() {
        return property;
    }

    /**
     * @return the name of the builder setting, which is also the field of {@link RingbusProperties}; null for a
     * combination of properties
     */
    public String getSetting() {
        return setting;
    }

    /** @return the refused value; null for a combination of properties */
    public Object getValue() {
        return value;
    }
}
