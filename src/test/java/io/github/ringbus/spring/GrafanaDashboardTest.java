package io.github.ringbus.spring;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Withdraw;
import io.github.ringbus.fixtures.RingbusFixture;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * docs/grafana-dashboard.json queries only series that ringbus's meters really export through Micrometer's Prometheus
 * registry (whose names add units and suffixes: {@code ringbus.ring.size} becomes {@code ringbus_ring_size_slots}),
 * with the labels it groups by.
 */
class GrafanaDashboardTest {

    private static final Pattern SERIES = Pattern.compile("ringbus_[a-z_]+");
    private static final Pattern GROUPED_BY = Pattern.compile("by \\(([a-z, ]+)\\)");

    @Test
    void everySeriesTheDashboardQueriesIsExportedWithTheLabelsItGroupsBy() throws IOException {
        String scrape = scrapeAfterSomeCommands();
        List<String> queries = queries();
        assertThat(queries).as("queries in the dashboard").hasSizeGreaterThan(5);

        Set<String> series = new TreeSet<>();
        for (String query : queries) {
            Matcher name = SERIES.matcher(query);
            while (name.find()) {
                series.add(name.group());
            }
        }
        for (String name : series) {
            List<String> lines = linesOf(scrape, name);
            assertThat(lines).as("series %s in Micrometer's Prometheus export", name).isNotEmpty();
            for (String query : queries) {
                if (!query.contains(name)) {
                    continue;
                }
                Matcher grouping = GROUPED_BY.matcher(query);
                while (grouping.find()) {
                    for (String label : grouping.group(1).split(",\\s*")) {
                        assertThat(lines).as("series %s carries label %s (grouped by in: %s)", name, label, query)
                                         .anyMatch(line -> line.contains(label + "=\""));
                    }
                }
            }
        }
        assertThat(series).as("the dashboard shows every meter ringbus has")
                          .anyMatch(s -> s.startsWith("ringbus_commands_total"))
                          .anyMatch(s -> s.startsWith("ringbus_commands_failed"))
                          .anyMatch(s -> s.startsWith("ringbus_ring_remaining"))
                          .anyMatch(s -> s.startsWith("ringbus_ring_size"))
                          .anyMatch(s -> s.startsWith("ringbus_store_batch_commands"))
                          .anyMatch(s -> s.startsWith("ringbus_store_batch_events"))
                          .anyMatch(s -> s.startsWith("ringbus_stage_latency"));
    }

    @Test
    void onTheFirstScrapeEveryValueIsANumberAndEveryShareOfAThreadIsInZeroToOne() {
        String scrape = scrapeAfterSomeCommands();

        List<String> samples = scrape.lines().filter(line -> line.startsWith("ringbus_")).toList();
        assertThat(samples).isNotEmpty().noneMatch(line -> line.endsWith(" NaN"));
        List<String> shares = samples.stream().filter(line -> line.startsWith("ringbus_stage_thread_busy")
                                                              || line.startsWith("ringbus_stage_thread_in_store"))
                                     .toList();
        assertThat(shares).as("the busy and in-store shares").hasSize(3).allSatisfy(
                line -> assertThat(Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1)))
                        .isBetween(0.0, 1.0));
    }

    @Test
    void theSpringBootPageNamesEverySeriesRingbusExportsToPrometheus() throws IOException {
        String page = Files.readString(Path.of("docs/spring-boot.md"));

        List<String> families = scrapeAfterSomeCommands().lines().filter(line -> line.startsWith("# TYPE ringbus_"))
                                                         .map(line -> line.split(" ")[2]).toList();

        // A distribution's families (name, name_max) are documented once as `name_*` (_count, _sum, _max).
        assertThat(families).isNotEmpty().allSatisfy(family -> assertThat(page).as("docs/spring-boot.md").contains(
                "`" + (family.endsWith("_max") ? family.substring(0, family.length() - 4) + "_*" : family)));
    }

    private static String scrapeAfterSomeCommands() {
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        RingbusMetrics metrics = new RingbusMetrics(registry, "bank");
        try (RingbusFixture ring = RingbusFixture.started(b -> b.pipelineMonitor(metrics))) {
            metrics.bindTo(ring.bus);
            ring.sendAndWait(new Open("a"));
            ring.sendAndWait(new Deposit("a", 5));
            assertThat(ring.sendAndWait(new Withdraw("a", Long.MAX_VALUE)).isExceptional()).isTrue();
            return registry.scrape();
        }
    }

    private static List<String> queries() throws IOException {
        JsonNode dashboard = new ObjectMapper().readTree(Path.of("docs/grafana-dashboard.json").toFile());
        List<String> queries = new ArrayList<>();
        for (JsonNode panel : dashboard.path("panels")) {
            for (JsonNode target : panel.path("targets")) {
                queries.add(target.path("expr").asText());
            }
        }
        for (JsonNode variable : dashboard.path("templating").path("list")) {
            if (variable.path("query").asText().contains("ringbus_")) {
                queries.add(variable.path("query").asText());
            }
        }
        return queries;
    }

    /** The sample lines of one series in Prometheus's text format ({@code name{labels} value}). */
    private static List<String> linesOf(String scrape, String name) {
        return scrape.lines().filter(line -> line.startsWith(name + "{") || line.startsWith(name + " ")).toList();
    }
}
