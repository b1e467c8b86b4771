package io.github.ringbus.benchmarks.report;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A bus's share of the limit no bus can avoid is a share: never above 100 %, which would mean a wrong limit. */
class SummaryTest {

    private static Score throughput(double median) {
        return new Score("oneDispatcher", "ringbus", "ringbus", 1, median, 0, Double.NaN, new double[]{median});
    }

    @Test
    void aShareBelowTheLimitIsPrintedAsAPercentage() {
        assertEquals("50 %", Summary.shareOfLimit("throughput", throughput(500), 1_000, null));
    }

    @Test
    void aShareAboveTheLimitSaysTheLimitWasMeasuredWrongInsteadOfAPercentage() {
        // --quick gave ringbus at "174 %" of the limit: one unwarmed second measures no limit.
        assertEquals("above this run's limit: the limit was measured wrong (too short or disturbed)",
                     Summary.shareOfLimit("throughput", throughput(1_740), 1_000, null));
    }

    @Test
    void withoutALimitNoShareIsPrinted() {
        assertEquals("", Summary.shareOfLimit("throughput", throughput(1_740), Double.NaN, null));
    }

    /** One JMH result of a benchmark with a bus parameter, as JMH writes it (the fields the summary reads). */
    private static String result(String benchmark, String bus, int threads, double... iterations) {
        double mean = java.util.Arrays.stream(iterations).average().orElse(0);
        String raw = java.util.Arrays.stream(iterations).mapToObj(Double::toString)
                                     .collect(java.util.stream.Collectors.joining(","));
        String params = bus == null ? "{\"rttMicros\":\"500\"}" : "{\"bus\":\"" + bus + "\",\"rttMicros\":\"500\"}";
        return "{\"benchmark\":\"" + benchmark + "\",\"threads\":" + threads + ",\"params\":" + params
               + ",\"primaryMetric\":{\"score\":" + mean + ",\"scoreError\":1.0,\"rawData\":[[" + raw + "]]}}";
    }

    @Test
    void theColdCaseAwayIsComparedWithSimpleColdAndSharedOfTheLimitThroughTheProxy() throws Exception {
        java.nio.file.Path results = java.nio.file.Files.createTempDirectory("summary-test");
        String cold = "io.github.ringbus.benchmarks.postgres.PostgresColdCacheBenchmark.eightDispatchers";
        java.nio.file.Files.writeString(results.resolve("postgres-away-cold.json"),
                "[" + result(cold, "simple-cold", 8, 1_000, 1_000) + "," + result(cold, "ringbus-cold", 8, 2_000, 2_000)
                + "]");
        java.nio.file.Files.writeString(results.resolve("limit-away.json"), "[" + result(
                "io.github.ringbus.benchmarks.postgres.PostgresLimitBenchmark.eightConnections", null, 8,
                10_000, 10_000) + "]");

        String summary = Summary.summarize(results, java.util.List.of("postgres-away-cold", "limit-away"), "test",
                                           "0.1", java.util.List.of(), false);

        org.junit.jupiter.api.Assertions.assertTrue(summary.contains(
                "| PostgreSQL 0.5 ms away, cold cache, 8 dispatchers | ringbus-cold | 2,000 (2,000-2,000, 2 it.) | "
                + "2.00 (2.00-2.00) | n/a | 20 % |"), summary);
    }

    /** One result of the server's limit in one statement form, as JMH writes it. */
    private static String limitResult(String form, double rowsPerSecond) {
        return "{\"benchmark\":\"io.github.ringbus.benchmarks.postgres.PostgresLimitBenchmark.eightConnections\","
               + "\"threads\":8,\"params\":{\"form\":\"" + form + "\",\"rttMicros\":\"0\"},"
               + "\"primaryMetric\":{\"score\":" + rowsPerSecond + ",\"scoreError\":1.0,\"rawData\":[["
               + rowsPerSecond + "," + rowsPerSecond + "]]}}";
    }

    @Test
    void theServersLimitIsItsBestStatementFormAndTheSummaryNamesTheForm() throws Exception {
        java.nio.file.Path results = java.nio.file.Files.createTempDirectory("summary-test");
        java.nio.file.Files.writeString(results.resolve("limit.json"), "[" + limitResult("values", 10_000) + ","
                + limitResult("unnest", 20_000) + "," + limitResult("copy", 15_000) + "]");
        String cases = "io.github.ringbus.benchmarks.postgres.PostgresGroupCommitBenchmark.eightDispatchers";
        java.nio.file.Files.writeString(results.resolve("postgres.json"),
                                        "[" + result(cases, "ringbus", 8, 1_000, 1_000) + "]");

        String summary = Summary.summarize(results, java.util.List.of("limit", "postgres"), "test", "0.1",
                                           java.util.List.of(), false);

        org.junit.jupiter.api.Assertions.assertTrue(summary.contains(
                "PostgreSQL's limit: 20,000 event rows/s, the most the server stored without any bus, from 8 "
                + "connection(s) (`PostgresLimitBenchmark.eightConnections`, transactions of 700 pre-serialized "
                + "rows, statement form `unnest`, the best measured)"), summary);
    }

    @Test
    void ringbusOnTheJpaEngineIsGivenAsAShareOfRingbusOnTheJdbcEngineCaseByCase() throws Exception {
        java.nio.file.Path results = java.nio.file.Files.createTempDirectory("summary-test");
        String cases = "io.github.ringbus.benchmarks.postgres.PostgresGroupCommitBenchmark.eightDispatchers";
        java.nio.file.Files.writeString(results.resolve("postgres.json"),
                                        "[" + result(cases, "ringbus", 8, 40_000, 40_000) + "]");
        java.nio.file.Files.writeString(results.resolve("postgres-jpa-defaults.json"),
                                        "[" + result(cases, "simple", 8, 1_000, 1_000) + ","
                                        + result(cases, "ringbus", 8, 4_000, 4_000) + "]");
        java.nio.file.Files.writeString(results.resolve("postgres-jpa-bytea.json"),
                                        "[" + result(cases, "ringbus", 8, 20_000, 20_000) + "]");

        String summary = Summary.summarize(results, java.util.List.of("postgres", "postgres-jpa-defaults",
                                                                      "postgres-jpa-bytea"), "test", "0.1",
                                           java.util.List.of(), false);

        org.junit.jupiter.api.Assertions.assertTrue(summary.contains(
                "by mapping and dispatchers: jpa-defaults 8: 10 %; jpa-bytea 8: 50 %."), summary);
        org.junit.jupiter.api.Assertions.assertTrue(summary.contains(
                "| PostgreSQL durable, JPA, Boot's defaults, 8 dispatchers | ringbus | 4,000 (4,000-4,000, 2 it.) "
                + "| 4.00 (4.00-4.00) |"), summary);
    }

    private static Score durable(double commandsPerSecond, java.util.Map<String, Double> secondary) {
        return new Score("eightDispatchers", "bus", "axon-disruptor-cached", 8, commandsPerSecond, 0, Double.NaN,
                         new double[]{commandsPerSecond}, secondary);
    }

    private static final Score SERVER_LIMIT = new Score("eightConnections", "benchmark", "eightConnections", 8, 40_657,
                                                        0, Double.NaN, new double[]{40_657});

    @Test
    void aDurableFigureAboveWhatTheServerItselfCountedIsRefused() {
        // benchmarks/run --quick printed 223,779 commands/s while the server stored 4,203 events in that 2 s iteration.
        String refusal = Summary.refusal(durable(223_779, java.util.Map.of(Summary.SERVER_ROWS, 2_101.0)), null);

        assertEquals("refused: 223,779 commands/s, but the server stored 2,101 events/s in the same iterations",
                     refusal);
    }

    @Test
    void aDurableFigureAboveTheServersLimitIsRefused() {
        assertEquals("refused: 60,000 commands/s, above the server's limit of 40,657 rows/s",
                     Summary.refusal(durable(60_000, java.util.Map.of()), SERVER_LIMIT));
    }

    @Test
    void aDurableFigureBelowWhatTheServerStoredIsPrinted() {
        // The server stores the commands in flight at the iteration's end too, and those sent while JMH ramps.
        assertEquals(null, Summary.refusal(durable(137_000, java.util.Map.of(Summary.SERVER_ROWS, 150_000.0)), null));
    }

    @Test
    void aDurableFigureTheServerAgreesWithIsPrinted() {
        assertEquals(null, Summary.refusal(durable(30_000, java.util.Map.of(Summary.SERVER_ROWS, 29_500.0)),
                                           SERVER_LIMIT));
    }

    @Test
    void theUtilizationRowNamesTheBusiestThreadsAndTheStoreThreadsTimeInTheStore() {
        java.util.Map<String, Double> secondary = new java.util.LinkedHashMap<>();
        secondary.put("util.machine", 70.0);
        secondary.put("util.jvm", 60.0);
        secondary.put("util.thread.ringbus-preload-handle", 20.0);
        secondary.put("util.thread.ringbus-store-complete", 19.0);
        secondary.put("util.thread.dispatchers", 8.0);
        secondary.put("util.in-store.ringbus-store-complete", 90.0);

        String row = Summary.utilizationRow("PostgreSQL durable, 8 dispatchers", durable(50_000, secondary), 2);

        assertEquals("| PostgreSQL durable, 8 dispatchers | axon-disruptor-cached | 70 % | 0.60 | 0.80 | "
                     + "ringbus-preload-handle 20, ringbus-store-complete 19, other (GC, JIT, threads under 2 %) 13, dispatchers 8 | "
                     + "ringbus-store-complete 90 % (busy 19 %) |\n", row);
    }

    @Test
    void stageThreadsKeepTheirNamesAndOtherThreadsAreSummedWithoutTheirNumbers() {
        assertEquals("ringbus-store-complete-3", Utilization.group("ringbus-store-complete-3"));
        assertEquals("ringbus-handle-0", Utilization.group("ringbus-handle-0"));
        assertEquals("ringbus-preload-handle", Utilization.group("ringbus-preload-handle"));
        assertEquals("ringbus-read-ahead-#", Utilization.group("ringbus-read-ahead-12"));
        assertEquals("dispatchers", Utilization.group("io.github.Bench.run-jmh-worker-7"));
    }
}
