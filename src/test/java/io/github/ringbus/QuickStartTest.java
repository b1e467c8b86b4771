package io.github.ringbus;

import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import org.axonframework.config.Configuration;
import org.axonframework.config.DefaultConfigurer;
import org.axonframework.eventsourcing.eventstore.inmemory.InMemoryEventStorageEngine;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** The README's quick start compiles, runs, and is the text the README shows. */
class QuickStartTest {

    @Test
    void quickStartRunsAndDeposits() {
        // quick-start:begin
        Configuration axon = DefaultConfigurer.defaultConfiguration()
                .configureEventStore(c -> RingEventStore.builder()
                        .storageEngine(new InMemoryEventStorageEngine())
                        .build())
                .configureAggregate(Account.class)
                .configureCommandBus(c -> RingCommandBus.builder()
                        .eventStore(c.eventStore())
                        .build())
                .start();

        axon.commandGateway().sendAndWait(new Open("acc-1"));
        long balance = axon.commandGateway().sendAndWait(new Deposit("acc-1", 100));

        axon.shutdown();
        // quick-start:end
        assertThat(balance).isEqualTo(100L);
    }

    @Test
    void readmeShowsTheQuickStartAsTested() throws IOException {
        List<String> source = Files.readAllLines(Path.of("src/test/java/io/github/ringbus/QuickStartTest.java"));
        List<String> readme = Files.readAllLines(Path.of("README.md"));

        assertThat(String.join("\n", readme)).contains(between(source, "// quick-start:begin", "// quick-start:end"));
    }

    private static String between(List<String> lines, String begin, String end) {
        int from = indexOf(lines, begin) + 1;
        int to = indexOf(lines, end);
        return lines.subList(from, to).stream()
                    .map(line -> line.length() >= 8 ? line.substring(8) : line.strip())
                    .collect(Collectors.joining("\n"));
    }

    private static int indexOf(List<String> lines, String marker) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).strip().equals(marker)) {
                return i;
            }
        }
        throw new AssertionError("Marker " + marker + " not found");
    }
}
