package io.github.ringbus.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Pins threads of this JVM to cores with Linux's {@code taskset}, for a measurement only: whether pinning ringbus's
 * stage threads pays on a big machine is to be measured before the library offers it. The stage threads are found by
 * the name the JVM gives each thread's kernel task ({@code /proc/self/task/<tid>/comm}: the first 15 characters of the
 * thread's name). Linux only; anything else fails the benchmark with a message saying so.
 */
final class ThreadPinning {

    private ThreadPinning() {
    }

    /**
     * Pins each live thread whose name starts with {@code prefix} to a core of its own, from the last core down, and
     * the calling thread (the benchmark's dispatcher) to the cores left, if any are.
     *
     * @param prefix the start of the stage threads' names, such as {@code "ringbus-"}
     * @return what was pinned where, for the benchmark's log
     */
    static String pinStagesAndCaller(String prefix) {
        int cores = Runtime.getRuntime().availableProcessors();
        TreeMap<String, Long> stages = threadsNamed(prefix);
        if (stages.isEmpty()) {
            throw new IllegalStateException("No thread named " + prefix + "* to pin in " + threadsNamed(""));
        }
        if (stages.size() >= cores) {
            throw new IllegalStateException(stages.size() + " stage threads " + stages.keySet() + " and only " + cores
                                                    + " cores: pinning each to a core of its own needs more cores");
        }
        StringBuilder pinned = new StringBuilder();
        int core = cores - 1;
        for (var stage : stages.entrySet()) {
            taskset(Integer.toString(core), stage.getValue());
            pinned.append(stage.getKey()).append(" -> ").append(core).append("; ");
            core--;
        }
        String callerCores = "0-" + core;
        taskset(callerCores, currentTid());
        pinned.append("caller -> ").append(callerCores);
        return pinned.toString();
    }

    /** The live threads of this JVM whose kernel name starts with {@code prefix}, by that name (then tid). */
    private static TreeMap<String, Long> threadsNamed(String prefix) {
        TreeMap<String, Long> found = new TreeMap<>();
        try (Stream<Path> tasks = Files.list(Path.of("/proc/self/task"))) {
            for (Path task : (Iterable<Path>) tasks::iterator) {
                String name = Files.readString(task.resolve("comm"), StandardCharsets.UTF_8).strip();
                if (name.startsWith(prefix)) {
                    found.put(name + " (" + task.getFileName() + ")", Long.parseLong(task.getFileName().toString()));
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("Pinning needs Linux's /proc/self/task: " + e, e);
        }
        return found;
    }

    private static long currentTid() {
        try {
            return Long.parseLong(Files.readSymbolicLink(Path.of("/proc/thread-self")).getFileName().toString());
        } catch (IOException e) {
            throw new IllegalStateException("Pinning needs Linux's /proc/thread-self: " + e, e);
        }
    }

    private static void taskset(String cores, long tid) {
        List<String> command = new ArrayList<>(List.of("taskset", "-pc", cores, Long.toString(tid)));
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(10, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IllegalStateException(String.join(" ", command) + " failed: " + output);
            }
        } catch (IOException e) {
            throw new IllegalStateException("Pinning needs taskset (util-linux): " + e, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while pinning", e);
        }
    }
}
