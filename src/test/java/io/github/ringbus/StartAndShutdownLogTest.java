package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.common.IdentifierFactory;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What an operator reads in the log at INFO: which message identifiers are in force (Axon logs that it found
 * ringbus's identifier factory whichever identifiers it then makes), the bus's settings at start, and one line at
 * shutdown. Run in a child JVM, since the tests here log at WARN.
 */
class StartAndShutdownLogTest {

    /** The child: a bus started, one command, shut down. */
    public static void main(String[] args) {
        IdentifierFactory.getInstance().generateIdentifier();
        try (RingbusFixture ring = RingbusFixture.started()) {
            ring.sendAndWait(new Open("logged"));
        }
    }

    /**
     * Stands in for Axon's {@code SpringTransactionManager}, which a Spring Boot application's bus gets (Spring is not
     * on this module's test class path): the line names the transaction manager by its simple name.
     */
    private static final class SpringTransactionManager implements org.axonframework.common.transaction.TransactionManager {
        @Override
        public org.axonframework.common.transaction.Transaction startTransaction() {
            throw new UnsupportedOperationException("never asked for a transaction here");
        }
    }

    private static String childLog(String... properties) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=info");
        command.addAll(List.of(properties));
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), StartAndShutdownLogTest.class.getName()));
        Process child = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] output = child.getInputStream().readAllBytes();
        assertThat(child.waitFor(60, TimeUnit.SECONDS)).isTrue();
        String log = new String(output, StandardCharsets.UTF_8);
        assertThat(child.exitValue()).as(log).isZero();
        return log;
    }

    @Test
    void theLogSaysWhichIdentifiersAreInForceTheSettingsAtStartAndOneLineAtShutdown() throws Exception {
        String log = childLog();

        assertThat(log).contains("message identifiers in force: time-based (version 7) UUIDs")
                       .contains("ringbus RingCommandBus started: topology ")
                       .contains("RingCommandBus shut down in ")
                       .contains("command(s) were in the ring when shutdown began");
    }

    /** docs/spring-boot.md shows the start line of a bus with a database's defaults on 2 cores as it is logged. */
    @Test
    void theStartLineDocsSpringBootShowsIsTheOneAStartingBusLogs() throws Exception {
        RingCommandBus bus = RingCommandBus.builder()
                .eventStore(RingEventStore.builder().storageEngine(
                        new org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine()).build())
                .transactionManager(new SpringTransactionManager())
                .topology(Topology.COMPACT).handlerThreads(1).storeThreads(1)
                .readAheadThreads(16) // what 2 cores choose (4 per core, at least 16), whatever runs this test
                .build();
        String page = java.nio.file.Files.readString(Path.of("docs/spring-boot.md"));

        assertThat(page).contains("\n" + bus.startLine() + "\n");
    }

    @Test
    void withRingbusTurnedOffTheLogSaysAxonsIdentifiersAreInForce() throws Exception {
        String log = childLog("-Dringbus.enabled=false");

        assertThat(log).contains("message identifiers in force: Axon's random (version 4) UUIDs");
    }
}
