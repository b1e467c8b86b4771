package io.github.ringbus;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code benchmarks/run} leaves the checkout clean: it writes each run to a folder git ignores, never over the
 * published files under {@code benchmarks/results/} (it used to overwrite seven of them, the README's summary among
 * them).
 */
class BenchmarksRunTest {

    @Test
    void theBenchmarkRunWritesToAFolderGitIgnores() throws IOException, InterruptedException {
        String script = Files.readString(Path.of("benchmarks/run"));
        Matcher results = Pattern.compile("(?m)^results=\"\\$benchmarks/([^\"$]+)").matcher(script);
        assertThat(results.find()).as("benchmarks/run names its results folder").isTrue();
        String folder = "benchmarks/" + results.group(1);

        assertThat(folder).doesNotStartWith("benchmarks/results");
        Process checkIgnore = new ProcessBuilder("git", "check-ignore", "-q", folder + "20260101-000000/summary.md")
                .redirectErrorStream(true).start();
        assertThat(checkIgnore.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(checkIgnore.exitValue()).as("git check-ignore of %s", folder).isZero();
    }
}
