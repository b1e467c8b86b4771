package io.github.ringbus.benchmarks.report;

import java.util.Comparator;
import java.util.List;

/**
 * The scores as a text table, grouped by thread count, each with its ratio to the baseline (e.g.
 * {@code simple}) measured at the same thread count in the same run.
 */
final class ScoreTable {

    private ScoreTable() {
    }

    /**
     * Formats {@code scores}, whose operations are called {@code unit} (e.g. {@code commands/s}), against
     * the scores labelled {@code baseline}. The bytes-per-operation column appears when JMH ran with
     * {@code -prof gc}.
     */
    static String format(List<Score> scores, String baseline, String unit) {
        return format(scores, baseline, unit, Double.NaN, 0);
    }

    /**
     * As {@link #format(List, String, String)}, with a column giving each score as a share of the machine's limit:
     * {@code limitPerThread} (what no bus can avoid, measured on one thread) times {@code cores}. No column when the
     * limit is {@code NaN}.
     */
    static String format(List<Score> scores, String baseline, String unit, double limitPerThread, int cores) {
        boolean allocation = scores.stream().anyMatch(score -> !Double.isNaN(score.bytesPerOp()));
        boolean limit = !Double.isNaN(limitPerThread);
        String row = "%-24s %7s %15s %14s %14s" + (limit ? " %14s" : "%s") + (allocation ? " %12s" : "%s") + "%n";
        String parameter = scores.isEmpty() ? "" : scores.get(0).parameter();

        StringBuilder table = new StringBuilder();
        table.append(String.format(row, parameter, "threads", unit, "± 99.9% CI", "× " + baseline,
                                   limit ? "of limit" : "", allocation ? "B/op" : ""));
        scores.stream()
              .sorted(Comparator.comparingInt(Score::threads))
              .forEach(score -> table.append(String.format(
                      row, score.label(), score.threads(), number(score.score()), number(score.error()),
                      ratio(score, baselineOf(scores, score, baseline)),
                      limit ? String.format("%.0f %%", 100 * score.score() / (limitPerThread * cores)) : "",
                      allocation ? number(score.bytesPerOp()) : "")));
        if (limit) {
            table.append(String.format("limit: %s %s on one thread (LimitBenchmark) x %d cores = %s%n",
                                       number(limitPerThread), unit, cores, number(limitPerThread * cores)));
        }
        return table.toString();
    }

    private static Score baselineOf(List<Score> scores, Score score, String baseline) {
        return scores.stream()
                     .filter(candidate -> candidate.label().equals(baseline)
                                          && candidate.threads() == score.threads()
                                          && candidate.method().equals(score.method()))
                     .findFirst()
                     .orElse(null);
    }

    private static String ratio(Score score, Score baseline) {
        return baseline == null ? "n/a" : String.format("%.2f", score.score() / baseline.score());
    }

    private static String number(double value) {
        return Double.isNaN(value) ? "n/a" : String.format("%,.0f", value);
    }
}
