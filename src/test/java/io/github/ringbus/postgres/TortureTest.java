package io.github.ringbus.postgres;

import org.junit.jupiter.api.Test;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 13's seeded torture ({@link Torture}) in a process of its own, on its own PostgreSQL server: in {@code verify}
 * a short profile (about a million commands); {@code -Dtorture.commands=10000000} for the long one, and
 * {@code -Dtorture.seed=N} to repeat a run. Its output is kept in {@code target/torture-<seed>.log}.
 */
class TortureTest {

    @Test
    void everyInvariantHoldsUnderSeededFaultsRestartsAndTerminatedBackends() throws Exception {
        long seed = Long.getLong("torture.seed", ThreadLocalRandom.current().nextLong(1, Long.MAX_VALUE));
        long commands = Long.getLong("torture.commands", 1_000_000L);
        int dispatchers = Integer.getInteger("torture.dispatchers", 8);
        int aggregates = Integer.getInteger("torture.aggregates", (int) Math.max(11_000, commands / 200));
        int epochs = Integer.getInteger("torture.epochs", (int) Math.max(4, Math.min(40, commands / 250_000)));
        Path log = Path.of("target", "torture-" + seed + ".log");
        Files.createDirectories(log.getParent());
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        long heapMegabytes = Math.max(1_024, commands / 1_000_000 * 300 + 512);
        ProcessBuilder builder = new ProcessBuilder(
                java, "-Xmx" + heapMegabytes + "m", "-Dorg.slf4j.simpleLogger.defaultLogLevel=error",
                "-Dtorture.blocking=" + System.getProperty("torture.blocking", "true"),
                "-cp", System.getProperty("java.class.path"), Torture.class.getName(),
                Long.toString(seed), Long.toString(commands), Integer.toString(dispatchers),
                Integer.toString(aggregates), Integer.toString(epochs));
        builder.redirectErrorStream(true);
        Process child = builder.start();
        List<String> lines = new ArrayList<>();
        try (BufferedReader output = new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
             var file = Files.newBufferedWriter(log, StandardCharsets.UTF_8)) {
            String line;
            while ((line = output.readLine()) != null) {
                file.write(line);
                file.newLine();
                file.flush();
                if (!line.startsWith("\tat ")) {
                    lines.add(line);
                }
                if (line.startsWith("epoch ") || line.startsWith("RESULT") || line.startsWith("commands")
                        || line.startsWith("outcomes") || line.startsWith("faults") || line.startsWith("unknown")
                        || line.startsWith("stored") || line.startsWith("commits") || line.startsWith("TORTURE")) {
                    System.out.println(line);
                }
            }
        }
        boolean ended = child.waitFor(10, TimeUnit.MINUTES);
        if (!ended) {
            child.destroyForcibly();
        }
        String result = lines.stream().filter(l -> l.startsWith("RESULT")).findFirst()
                             .orElse("no result (see " + log.toAbsolutePath() + ")");
        assertThat(result)
                .as("torture with seed %d (rerun: -Dtorture.seed=%d); output in %s:%n%s", seed, seed,
                    log.toAbsolutePath(), String.join(System.lineSeparator(),
                                                      lines.subList(Math.max(0, lines.size() - 60), lines.size())))
                .startsWith("RESULT OK");
        assertThat(child.exitValue()).isZero();
    }
}
