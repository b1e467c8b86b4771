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
     * @throws IllegalArgumentException if a benchmark has more or fewer than one parameter
     */
    static List<Score> read(Path file) throws IOException {
        List<Score> scores = new ArrayList<>();
        for (JsonNode result : new ObjectMapper().readTree(file.toFile())) {
            String benchmark = result.path("benchmark").asText();
            JsonNode primary = result.path("primaryMetric");
            Map.Entry<String, JsonNode> parameter = onlyParameter(benchmark, result.path("params"));
            scores.add(new Score(benchmark.substring(benchmark.lastIndexOf('.') + 1),
                                 parameter.getKey(),
                                 parameter.getValue().asText(),
                                 result.path("threads").asInt(),
                                 primary.path("score").asDouble(),
                                 primary.path("scoreError").asDouble(Double.NaN),
                                 allocation(result.path("secondaryMetrics"))));
        }
        return scores;
    }

    private static Map.Entry<String, JsonNode> onlyParameter(String benchmark, JsonNode params) {
        if (params.size() != 1) {
            throw new IllegalArgumentException(benchmark + " has " + params.size()
                                               + " parameters; the report shows benchmarks with exactly one");
        }
        return params.fields().next();
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
