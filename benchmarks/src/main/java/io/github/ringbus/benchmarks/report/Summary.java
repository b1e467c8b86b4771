package io.github.ringbus.benchmarks.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The one report of a {@code benchmarks/run}: every case's commands/s per bus with the spread of its iterations, its
 * ratio to SimpleCommandBus and to Axon's DisruptorCommandBus (cached) with the range the iterations allow, its share
 * of the limit, the {@code sendAndWait} round trip's median and p99, charts, and where the JSON lies. Printed, and
 * written as {@code summary.md} in the results directory so that runs can be linked and compared.
 *
 * <pre>
 * java -cp benchmarks.jar io.github.ringbus.benchmarks.report.Summary RESULTS_DIR
 *      [--command "benchmarks/run"] [--load-at-start 0.12] [--warning "..."] [--only postgres]
 * </pre>
 * Reads whichever of {@code throughput.json}, {@code limit.json}, {@code postgres.json}, the JPA engine's
 * {@code postgres-jpa-defaults.json} and {@code postgres-jpa-bytea.json}, {@code postgres-away.json},
 * {@code postgres-away-cold.json}, {@code limit-away.json} and {@code roundtrip.json} the directory has ({@code --only}:
 * those of the given names, e.g. after a run of only one case). The cold case is compared with {@code simple-cold}, the
 * cases 0.5 ms away are shares of the server's limit through the same proxy ({@code limit-away.json}).
 */
public final class Summary {

    private static final String SIMPLE = "simple";
    private static final String AXON_DISRUPTOR = "axon-disruptor-cached";
    /** The events the server stored per second of an iteration, as the PostgreSQL benchmark reports it. */
    public static final String SERVER_ROWS = "server.rows";
    private static final Map<String, String> CASES = Map.ofEntries(
            Map.entry("throughput/oneDispatcher", "in memory, 1 dispatcher"),
            Map.entry("throughput/fourDispatchers", "in memory, 4 dispatchers"),
            Map.entry("postgres/oneDispatcher", "PostgreSQL durable, 1 dispatcher"),
            Map.entry("postgres/eightDispatchers", "PostgreSQL durable, 8 dispatchers"),
            Map.entry("postgres/sixtyFourDispatchers", "PostgreSQL durable, 64 dispatchers"),
            Map.entry("postgres-jpa-defaults/oneDispatcher", "PostgreSQL durable, JPA, Boot's defaults, 1 dispatcher"),
            Map.entry("postgres-jpa-defaults/eightDispatchers",
                      "PostgreSQL durable, JPA, Boot's defaults, 8 dispatchers"),
            Map.entry("postgres-jpa-defaults/sixtyFourDispatchers",
                      "PostgreSQL durable, JPA, Boot's defaults, 64 dispatchers"),
            Map.entry("postgres-jpa-bytea/oneDispatcher", "PostgreSQL durable, JPA, bytea + batching, 1 dispatcher"),
            Map.entry("postgres-jpa-bytea/eightDispatchers",
                      "PostgreSQL durable, JPA, bytea + batching, 8 dispatchers"),
            Map.entry("postgres-jpa-bytea/sixtyFourDispatchers",
                      "PostgreSQL durable, JPA, bytea + batching, 64 dispatchers"),
            Map.entry("postgres-away/oneDispatcher", "PostgreSQL 0.5 ms away, 1 dispatcher"),
            Map.entry("postgres-away/eightDispatchers", "PostgreSQL 0.5 ms away, 8 dispatchers"),
            Map.entry("postgres-away/sixtyFourDispatchers", "PostgreSQL 0.5 ms away, 64 dispatchers"),
            Map.entry("postgres-away-cold/oneDispatcher", "PostgreSQL 0.5 ms away, cold cache, 1 dispatcher"),
            Map.entry("postgres-away-cold/eightDispatchers", "PostgreSQL 0.5 ms away, cold cache, 8 dispatchers"),
            Map.entry("postgres-away-cold/sixtyFourDispatchers",
                      "PostgreSQL 0.5 ms away, cold cache, 64 dispatchers"));
    /** The commands/s files, in the order of the summary's table; the cold one compares with {@code simple-cold}. */
    static final List<String> COMMAND_FILES = List.of("throughput", "postgres", "postgres-jpa-defaults",
                                                      "postgres-jpa-bytea", "postgres-away", "postgres-away-cold");
    /** Axon's JPA engine on the durable server, by Hibernate mapping (PostgresGroupCommitBenchmark, store=jpa-*). */
    static final List<String> JPA_FILES = List.of("postgres-jpa-defaults", "postgres-jpa-bytea");

    private Summary() {
    }

    public static void main(String[] args) throws IOException {
        System.setProperty("java.awt.headless", "true");
        if (args.length == 0 || args[0].startsWith("--")) {
            throw new IllegalArgumentException(
                    "usage: Summary RESULTS_DIR [--command TEXT] [--load-at-start LOAD] [--warning TEXT] [--only NAMES] [--quick]");
        }
        Path results = Path.of(args[0]);
        String command = "benchmarks/run";
        String loadAtStart = "not recorded";
        List<String> warnings = new ArrayList<>();
        List<String> only = List.of("throughput", "limit", "roundtrip", "postgres", "postgres-jpa-defaults",
                                    "postgres-jpa-bytea", "postgres-away", "postgres-away-cold", "limit-away");
        boolean quick = false;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--only" -> only = List.of(args[++i].split(","));
                case "--command" -> command = args[++i];
                case "--load-at-start" -> loadAtStart = args[++i];
                case "--warning" -> warnings.add(args[++i]);
                case "--quick" -> quick = true;
                default -> throw new IllegalArgumentException("Unknown option " + args[i]);
            }
        }
        String summary = summarize(results, only, command, loadAtStart, warnings, quick);
        Files.writeString(results.resolve("summary.md"), summary);
        System.out.print(summary);
        System.out.println();
        System.out.println("Written to " + results.resolve("summary.md"));
    }

    static String summarize(Path results, List<String> only, String command, String loadAtStart,
                            List<String> warnings, boolean quick) throws IOException {
        StringBuilder md = new StringBuilder("# ringbus benchmark summary\n\n");
        md.append(String.format("`%s`, finished %s; %s.%n", command,
                                ZonedDateTime.now(ZoneOffset.UTC).format(DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm 'UTC'")),
                                machine()));
        md.append(String.format("Load average (1 min) before the first benchmark: %s.%n%n", loadAtStart));
        for (String warning : warnings) {
            md.append("**Warning:** ").append(warning).append("\n\n");
        }

        Path limitFile = results.resolve("limit.json");
        List<Score> limits = only.contains("limit") && Files.exists(limitFile) ? JmhJson.read(limitFile) : List.of();
        double limitPerThread = limits.stream().filter(s -> s.method().equals("oneThread")).mapToDouble(Score::median)
                                      .findFirst().orElse(Double.NaN);
        // The durable server's limit: the most rows/s it stored, over the numbers of connections measured (each
        // deposit is one event row, so commands/s and rows/s compare directly).
        Score serverLimit = limits.stream().filter(s -> s.method().endsWith("Connection")
                                                        || s.method().endsWith("Connections"))
                                  .max(java.util.Comparator.comparingDouble(Score::median)).orElse(null);
        // The same, through the delay proxy (limit-away.json), for the cases 0.5 ms away.
        Path awayLimitFile = results.resolve("limit-away.json");
        Score serverLimitAway = only.contains("limit-away") && Files.exists(awayLimitFile)
                ? JmhJson.read(awayLimitFile).stream().max(java.util.Comparator.comparingDouble(Score::median))
                         .orElse(null)
                : null;
        int cores = Runtime.getRuntime().availableProcessors();

        List<String> charts = new ArrayList<>();
        List<String> files = new ArrayList<>();
        StringBuilder throughput = new StringBuilder();
        StringBuilder utilization = new StringBuilder();
        boolean anyWide = false;
        boolean anyRefused = false;
        for (String file : COMMAND_FILES) {
            Path json = results.resolve(file + ".json");
            if (!only.contains(file) || !Files.exists(json)) {
                continue;
            }
            files.add(json.getFileName().toString());
            List<Score> scores = JmhJson.read(json);
            List<String> methods = scores.stream().sorted(java.util.Comparator.comparingInt(Score::threads))
                                         .map(Score::method).distinct().toList();
            for (String method : methods) {
                String name = CASES.getOrDefault(file + "/" + method, file + ", " + method);
                for (Score score : scores.stream().filter(s -> s.method().equals(method)).toList()) {
                    anyWide |= score.wide();
                    utilization.append(utilizationRow(name, score, cores));
                    String refused = file.startsWith("postgres")
                            ? refusal(score, file.startsWith("postgres-away") ? serverLimitAway : serverLimit)
                            : null;
                    if (refused != null) {
                        anyRefused = true;
                        throughput.append(String.format("| %s | %s | %s | | | | |%n", name, score.label(), refused));
                        continue;
                    }
                    throughput.append(String.format("| %s | %s | %s (%s-%s, %d it.) | %s | %s | %s | ±%s%s |%n",
                            name, score.label(), number(score.median()), number(score.min()), number(score.max()),
                            score.iterations().length,
                            ratio(score, baseline(scores, score, file.endsWith("-cold") ? SIMPLE + "-cold" : SIMPLE)),
                            ratio(score, baseline(scores, score, AXON_DISRUPTOR)),
                            quick ? "not with --quick" : shareOfLimit(file, score, limitPerThread * cores,
                                                                     file.startsWith("postgres-away")
                                                                             ? serverLimitAway : serverLimit),
                            number(score.error()), score.wide() ? " (wide)" : ""));
                }
            }
            Path png = results.resolve(file + ".png");
            SpreadChart.write(scores, file + ": commands/s, higher is better; dots: the iterations, diamonds: their median",
                              "commands/s", png);
            charts.add(png.getFileName().toString());
        }
        if (!throughput.isEmpty()) {
            md.append("## Commands per second (higher is better)\n\n");
            md.append("| case | bus | median (lowest-highest iteration) | × simple | × axon-disruptor-cached | of the limit | JMH 99.9 % |\n");
            md.append("|---|---|---:|---:|---:|---:|---:|\n");
            md.append(throughput).append('\n');
            md.append("Ratios: median over median, and in brackets the lowest and highest the iterations allow (the "
                      + "bus's lowest iteration over the other's highest, and the reverse), measured side by side in "
                      + "this run. ");
            if (!Double.isNaN(limitPerThread)) {
                md.append(String.format("The limit: %s commands/s on one thread without a bus (`LimitBenchmark`, "
                                        + "what no bus can avoid for this workload) x %d cores = %s. ",
                                        number(limitPerThread), cores, number(limitPerThread * cores)));
                files.add("limit.json");
            }
            if (serverLimitAway != null && files.contains("postgres-away.json")) {
                md.append(String.format("0.5 ms away (a TCP proxy delaying each direction by half the round trip, "
                                        + "`-p rttMicros=500`): the server's limit through the same proxy, %s rows/s "
                                        + "from %d connection(s); `simple-cold` and `ringbus-cold` keep a tenth of "
                                        + "100,000 accounts in their caches and deposit to accounts drawn at random. ",
                                        number(serverLimitAway.median()), serverLimitAway.threads()));
                files.add("limit-away.json");
            }
            if (serverLimit != null && files.contains("postgres.json")) {
                md.append(String.format("PostgreSQL's limit: %s event rows/s, the most the server stored without any "
                                        + "bus, from %d connection(s) (`PostgresLimitBenchmark.%s`, transactions of "
                                        + "700 pre-serialized rows%s); each command stores one row. ",
                                        number(serverLimit.median()), serverLimit.threads(), serverLimit.method(),
                                        serverLimit.parameter().equals("form")
                                                ? ", statement form `" + serverLimit.label() + "`, the best measured"
                                                : ""));
            }
            String jpa = ringbusOnJpaAgainstJdbc(results, only, files);
            if (!jpa.isEmpty()) {
                md.append(jpa);
            }
            if (anyRefused) {
                md.append("\"refused\": a durable figure is printed only when the events the server itself counted "
                          + "in the same iterations are not fewer (by more than 10 %) and it is not above the server's "
                          + "limit: a figure that fails either check is a counting error, not a speed. ");
            }
            if (anyWide) {
                md.append("\"(wide)\": JMH's 99.9 % interval is wider than a fifth of the score (few iterations, a "
                          + "noisy machine); read the iterations' spread instead.");
            }
            md.append("\n\n");
        }

        if (!utilization.isEmpty()) {
            md.append("## Where the time goes (the measurement iterations, `-prof ")
              .append(Utilization.class.getName()).append("`)\n\n");
            md.append("| case | bus | machine busy | this JVM | outside it (the server, ...) | busiest threads, % of a core "
                      + "| ringbus store threads in the store |\n");
            md.append("|---|---|---:|---:|---:|---|---|\n");
            md.append(utilization).append('\n');
            md.append(String.format("Machine busy: all %d cores together (`/proc/stat`); this JVM and outside it in "
                                    + "cores (1.00 = one core busy); threads in %% of one core, JMH's dispatching "
                                    + "threads summed as `dispatchers`; `other`: the JVM's own (GC, JIT) and threads "
                                    + "under 2 %% of a core each. A "
                                    + "ringbus store thread much longer in the store than busy waits on the server.%n%n",
                                    cores));
        }

        Path roundTrip = results.resolve("roundtrip.json");
        if (only.contains("roundtrip") && Files.exists(roundTrip)) {
            files.add("roundtrip.json");
            md.append("## `sendAndWait` round trip from one thread (µs, lower is better)\n\n");
            md.append("| bus | p50 | p99 | p99.9 | p50 × simple | p99 × simple | p50 × floor | samples |\n"
                      + "|---|---:|---:|---:|---:|---:|---:|---:|\n");
            JsonNode all = new ObjectMapper().readTree(roundTrip.toFile());
            JsonNode simple = null;
            // HandOffFloorBenchmark with two hops: an empty COMPACT ring, what waking the threads alone costs.
            JsonNode floor = null;
            for (JsonNode result : all) {
                if (SIMPLE.equals(result.path("params").path("bus").asText())) {
                    simple = result.path("primaryMetric").path("scorePercentiles");
                }
                if ("2".equals(result.path("params").path("hops").asText())) {
                    floor = result.path("primaryMetric").path("scorePercentiles");
                }
            }
            for (JsonNode result : all) {
                JsonNode percentiles = result.path("primaryMetric").path("scorePercentiles");
                long samples = 0;
                for (JsonNode fork : result.path("primaryMetric").path("rawDataHistogram")) {
                    for (JsonNode iteration : fork) {
                        for (JsonNode bucket : iteration) {
                            samples += bucket.path(1).asLong();
                        }
                    }
                }
                String name = result.path("params").has("hops")
                        ? "floor: an empty ring, " + result.path("params").path("hops").asText() + " hop(s)"
                        : result.path("params").path("bus").asText();
                md.append(String.format("| %s | %.2f | %.2f | %.1f | %s | %s | %s | %,d |%n",
                        name,
                        percentiles.path("50.0").asDouble(), percentiles.path("99.0").asDouble(),
                        percentiles.path("99.9").asDouble(),
                        simple == null ? "n/a" : String.format("%.2f", percentiles.path("50.0").asDouble()
                                                                       / simple.path("50.0").asDouble()),
                        simple == null ? "n/a" : String.format("%.2f", percentiles.path("99.0").asDouble()
                                                                       / simple.path("99.0").asDouble()),
                        floor == null ? "n/a" : String.format("%.2f", percentiles.path("50.0").asDouble()
                                                                      / floor.path("50.0").asDouble()),
                        samples));
            }
            md.append('\n');
        }

        if (!charts.isEmpty()) {
            md.append("## Charts\n\n");
            for (String chart : charts) {
                md.append(String.format("![%s](%s)%n", chart, chart));
            }
            md.append('\n');
        }
        md.append("## Files\n\nIn `").append(results).append("`: ").append(String.join(", ", files))
          .append(" (JMH's JSON), the charts, and `logs/` (JMH's full output).\n");
        return md.toString();
    }

    /**
     * A bus's share of what no bus can exceed: in memory the workload's limit, on PostgreSQL the server's. A bus cannot
     * do more than the work without any bus, so a share above 100 % says that this run's limit is wrong (measured too
     * briefly, before the JIT warmed up, or disturbed), not that the bus beat it: it is printed as such, never as a
     * number. {@code --quick} prints no share at all (one unwarmed iteration measures no limit).
     */
    static String shareOfLimit(String file, Score score, double inMemoryLimit, Score serverLimit) {
        double limit = file.equals("throughput") ? inMemoryLimit
                : file.startsWith("postgres") && serverLimit != null ? serverLimit.median() : Double.NaN;
        if (Double.isNaN(limit)) {
            return "";
        }
        double share = score.median() / limit;
        return share > 1.0 ? "above this run's limit: the limit was measured wrong (too short or disturbed)"
                : String.format("%.0f %%", 100 * share);
    }

    /**
     * Why a durable figure must not be printed, or null when it may: the server's own count of the events it stored in
     * the same iterations ({@code server.rows}: per second of their measured time, one event per command) is more
     * than 10 % below it (the server may store more: the commands in flight at an iteration's end, and those sent
     * while JMH starts and stops its threads), or it is above the server's limit by more than 10 % (no bus stores
     * faster than the server alone).
     */
    static String refusal(Score score, Score serverLimit) {
        Double rows = score.secondary().get(SERVER_ROWS);
        if (rows != null && !rows.isNaN() && score.score() > 1.1 * rows) {
            return String.format("refused: %s commands/s, but the server stored %s events/s in the same iterations",
                                 number(score.score()), number(rows));
        }
        if (serverLimit != null && score.median() > 1.1 * serverLimit.median()) {
            return String.format("refused: %s commands/s, above the server's limit of %s rows/s",
                                 number(score.median()), number(serverLimit.median()));
        }
        return null;
    }

    /** A row of the utilization table, or nothing when the score has no {@code util.*} results. */
    static String utilizationRow(String name, Score score, int cores) {
        Map<String, Double> secondary = score.secondary();
        Double jvm = secondary.get("util.jvm");
        if (jvm == null) {
            return "";
        }
        Double machine = secondary.get("util.machine");
        double jvmCores = jvm / 100;
        String outside = machine == null ? "n/a"
                : String.format("%.2f", Math.max(0, machine / 100 * cores - jvmCores));
        List<Map.Entry<String, Double>> threads = new ArrayList<>();
        double named = 0;
        for (Map.Entry<String, Double> entry : secondary.entrySet()) {
            if (entry.getKey().startsWith("util.thread.")) {
                threads.add(Map.entry(entry.getKey().substring("util.thread.".length()), entry.getValue()));
                named += entry.getValue();
            }
        }
        threads.add(Map.entry("other (GC, JIT, threads under 2 %)", Math.max(0, jvm - named)));
        threads.sort(Map.Entry.<String, Double>comparingByValue().reversed());
        StringBuilder busiest = new StringBuilder();
        for (int i = 0; i < Math.min(5, threads.size()); i++) {
            busiest.append(i == 0 ? "" : ", ").append(String.format("%s %.0f", threads.get(i).getKey(),
                                                                    threads.get(i).getValue()));
        }
        StringBuilder inStore = new StringBuilder();
        secondary.forEach((label, value) -> {
            if (label.startsWith("util.in-store.")) {
                String thread = label.substring("util.in-store.".length());
                Double busy = secondary.get("util.thread." + thread);
                inStore.append(inStore.isEmpty() ? "" : ", ")
                       .append(String.format("%s %.0f %% (busy %.0f %%)", thread, value, busy == null ? 0 : busy));
            }
        });
        return String.format("| %s | %s | %s | %.2f | %s | %s | %s |%n", name, score.label(),
                             machine == null ? "n/a" : String.format("%.0f %%", machine), jvmCores, outside, busiest,
                             inStore);
    }

    private static String machine() {
        long memory = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getTotalMemorySize();
        return String.format("%d cores, %s %s, %,d MB of memory", Runtime.getRuntime().availableProcessors(),
                             System.getProperty("java.vm.name"), System.getProperty("java.runtime.version"),
                             memory >> 20);
    }

    /**
     * ringbus on JPA as a share of ringbus on Axon's JDBC engine, case by case, from the same run: what a user of
     * Boot's JPA store keeps of group commit's gain. Empty without both.
     */
    static String ringbusOnJpaAgainstJdbc(Path results, List<String> only, List<String> files) throws IOException {
        if (!files.contains("postgres.json")) {
            return "";
        }
        List<Score> jdbc = JmhJson.read(results.resolve("postgres.json"));
        StringBuilder shares = new StringBuilder();
        for (String file : JPA_FILES) {
            if (!only.contains(file) || !files.contains(file + ".json")) {
                continue;
            }
            for (Score score : JmhJson.read(results.resolve(file + ".json"))) {
                Score onJdbc = score.label().equals("ringbus") ? baseline(jdbc, score, "ringbus") : null;
                if (onJdbc != null) {
                    shares.append(String.format("%s%s %d: %.0f %%", shares.isEmpty() ? "" : "; ",
                                                file.substring("postgres-".length()), score.threads(),
                                                100 * score.median() / onJdbc.median()));
                }
            }
        }
        return shares.isEmpty() ? ""
                : "ringbus on JPA (on the engine its Spring Boot auto-configuration builds, "
                  + "`PostgresJpaEventStorageEngine`) as a share of ringbus on Axon's JDBC engine (medians, same run), "
                  + "by mapping and dispatchers: " + shares + ". `jpa-defaults`: Hibernate's defaults as Spring Boot "
                  + "configures them (`oid` large-object payload columns, no JDBC batching); `jpa-bytea`: `bytea` "
                  + "columns and JDBC batches of 64; `simple` and `ringbus-axon-jpa` (ringbus with "
                  + "`ringbus.jpa-bulk-append=false`) on Axon's own JPA engine. ";
    }

    private static Score baseline(List<Score> scores, Score score, String label) {
        return scores.stream()
                     .filter(s -> s.label().equals(label) && s.method().equals(score.method()))
                     .findFirst().orElse(null);
    }

    private static String ratio(Score score, Score baseline) {
        if (baseline == null) {
            return "n/a";
        }
        return String.format("%.2f (%.2f-%.2f)", score.median() / baseline.median(),
                             score.min() / baseline.max(), score.max() / baseline.min());
    }

    private static String number(double value) {
        return Double.isNaN(value) ? "n/a" : String.format("%,.0f", value);
    }
}
