package io.github.ringbus;

import org.axonframework.messaging.Message;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The tests run on the Axon Framework version they are meant to: the build runs a share of them a second time with
 * the oldest Axon ringbus supports in place of the one it is built against (the POM's {@code oldest-axon}
 * execution, which sets {@code ringbus.expectedAxonVersion}); were the jars not swapped, that run would prove
 * nothing, and this test fails it.
 */
class AxonOnTheClassPathTest {

    @Test
    void axonMessagingOnTheClassPathIsTheVersionThisRunExpects() throws IOException {
        String expected = System.getProperty("ringbus.expectedAxonVersion");
        String onClassPath = axonMessagingVersion();
        assertThat(onClassPath).as("axon-messaging's version on the class path").isNotBlank();
        if (expected != null) {
            assertThat(onClassPath).isEqualTo(expected);
        }
        assertThat(Message.class.getProtectionDomain().getCodeSource().getLocation().getPath())
                .as("the jar Axon's Message class comes from")
                .contains("axon-messaging-" + onClassPath);
    }

    private static String axonMessagingVersion() throws IOException {
        try (InputStream pom = Message.class.getResourceAsStream(
                "/META-INF/maven/org.axonframework/axon-messaging/pom.properties")) {
            assertThat(pom).as("axon-messaging's pom.properties").isNotNull();
            Properties properties = new Properties();
            properties.load(pom);
            return properties.getProperty("version");
        }
    }
}
