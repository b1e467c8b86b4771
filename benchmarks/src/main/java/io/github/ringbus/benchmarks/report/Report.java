package io.github.ringbus.benchmarks.report;

import java.nio.file.Path;
import java.util.List;

/**
 * Prints a JMH JSON result as a table (score, JMH's error, ratio to a baseline at the same thread count)
 * and draws it as a bar chart beside the JSON file.
 *
 * <pre>
 * java -cp benchmarks.jar io.github.ringbus.benchmarks.report.Report results/throughput.json
 *      [--baseline simple] [--unit commands/s] [--chart results/throughput.png] [--limit results/limit.json]
 * </pre>
 * {@code --limit}: a {@code LimitBenchmark} result; each score is then also given as a share of that one-thread rate
 * times this machine's cores.
 */
public final class Report {

    private Report() {
    }

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        if (args.length == 0 || args[0].startsWith("--")) {
            throw new IllegalArgumentException(
                    "usage: Report RESULT.json [--baseline LABEL] [--unit UNIT] [--chart CHART.png] [--limit LIMIT.json]");
        }
        Path json = Path.of(args[0]);
        String baseline = "simple";
        String unit = "commands/s";
        String name = json.getFileName().toString().replaceFirst("\\.json$", "");
        Path chart = json.resolveSibling(name + ".png");
        double limit = Double.NaN;
        for (int i = 1; i < args.length; i++) {
            switch (args[i]) {
                case "--baseline" -> baseline = args[++i];
                case "--unit" -> unit = args[++i];
                case "--chart" -> chart = Path.of(args[++i]);
                case "--limit" -> limit = JmhJson.read(Path.of(args[++i])).get(0).score();
                default -> throw new IllegalArgumentException("Unknown option " + args[i]);
            }
        }

        List<Score> scores = JmhJson.read(json);
        System.out.print(ScoreTable.format(scores, baseline, unit, limit, Runtime.getRuntime().availableProcessors()));
        String title = name + ": " + unit + ", higher is better; dots: the iterations, diamonds: their median";
        SpreadChart.write(scores, title, unit, chart);
        System.out.println("Chart: " + chart);
    }
}
