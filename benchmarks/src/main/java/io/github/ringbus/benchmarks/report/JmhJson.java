package io.github.ringbus.benchmarks.report;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/** Reads the file JMH writes with {@code -rf json}. */
final class JmhJson {

    private static final String ALLOCATION = "gc.alloc.rate.norm";

    private JmhJson() {
    }

    /**
     * The scores in {@code file}, in JMH's order.
     *
     * @throws IllegalArgumentException if a benchmark has no parameter, or several of which none is {@code bus}
     */
    static List<Score> read(Path file) throws IOException {
        List<Score> scores = new ArrayList<>();
        for (JsonNode result : new ObjectMapper().readTree(file.toFile())) {
            String benchmark = result.path("benchmark").asText();
            JsonNode primary = result.path("primaryMetric");
            Map.Entry<String, JsonNode> parameter = labelParameter(benchmark, result.path("params"));
            scores.add(new Score(benchmark.substring(benchmark.lastIndexOf('.') + 1),
                                 parameter.getKey(),
                                 parameter.getValue().asText(),
                                 result.path("threads").asInt(),
                                 primary.path("score").asDouble(),
                                 primary.path("scoreError").asDouble(Double.NaN),
                                 allocation(result.path("secondaryMetrics")),
                                 iterations(primary.path("rawData")),
                                 secondary(result.path("secondaryMetrics"))));
        }
        return scores;
    }

    /**
     * The parameter that labels a score: {@code bus} when the benchmark has it (other parameters, such as the
     * PostgreSQL benchmark's {@code inFlight}, are the same for every bus of a run), else {@code form} (the server's
     * limit, by statement form), else the only one.
     */
    private static Map.Entry<String, JsonNode> labelParameter(String benchmark, JsonNode params) {
        if (params.has("bus")) {
            return Map.entry("bus", params.get("bus"));
        }
        if (params.has("form")) {
            // PostgresLimitBenchmark: the statement form (its round trip, rttMicros, is the same for every form).
            return Map.entry("form", params.get("form"));
        }
        if (params.isMissingNode() || params.isEmpty()) {
            // A benchmark without parameters (the limit): labelled by its method.
            String method = benchmark.substring(benchmark.lastIndexOf('.') + 1);
            return Map.entry("benchmark", new com.fasterxml.jackson.databind.node.TextNode(method));
        }
        if (params.size() != 1) {
            throw new IllegalArgumentException(benchmark + " has " + params.size()
                                               + " parameters and none is 'bus'; the report cannot label its scores");
        }
        return params.fields().next();
    }

    /** Every measured iteration's score over all forks ({@code rawData}: one array per fork), sorted. */
    private static double[] iterations(JsonNode rawData) {
        List<Double> values = new ArrayList<>();
        for (JsonNode fork : rawData) {
            for (JsonNode iteration : fork) {
                values.add(iteration.asDouble());
            }
        }
        return values.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    }

    /** Every secondary result's score (its mean over the iterations), by label, in JMH's order. */
    private static Map<String, Double> secondary(JsonNode secondaryMetrics) {
        Map<String, Double> secondary = new java.util.LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> fields = secondaryMetrics.fields(); fields.hasNext(); ) {
            Map.Entry<String, JsonNode> field = fields.next();
            secondary.put(field.getKey(), field.getValue().path("score").asDouble(Double.NaN));
        }
        return secondary;
    }

    /** JMH names the metric {@code gc.alloc.rate.norm}, and before 1.33 {@code ·gc.alloc.rate.norm}. */
    private static double allocation(JsonNode secondaryMetrics) {
        for (Iterator<String> names = secondaryMetrics.fieldNames(); names.hasNext(); ) {
            String name = names.next();
            if (name.endsWith(ALLOCATION) && name.length() <= ALLOCATION.length() + 1) {
                return secondaryMetrics.path(name).path("score").asDouble();
            }
        }
        return Double.NaN;
    }
}
