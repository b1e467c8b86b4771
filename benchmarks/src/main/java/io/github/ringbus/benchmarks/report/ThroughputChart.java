package io.github.ringbus.benchmarks.report;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.TreeSet;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.CategoryChart;
import org.knowm.xchart.CategoryChartBuilder;
import org.knowm.xchart.style.Styler;

/** The scores as a bar chart: one group of bars per label, one bar per thread count, with JMH's error. */
final class ThroughputChart {

    private ThroughputChart() {
    }

    /** Draws {@code scores} to the PNG file {@code png}; needs {@code java.awt.headless=true} on a server. */
    static void write(List<Score> scores, String title, String unit, Path png) throws IOException {
        CategoryChart chart = new CategoryChartBuilder().width(1000).height(560)
                                                        .title(title)
                                                        .xAxisTitle("")
                                                        .yAxisTitle(unit)
                                                        .build();
        chart.getStyler().setLegendPosition(Styler.LegendPosition.InsideNW);
        chart.getStyler().setYAxisDecimalPattern("#,###");
        chart.getStyler().setErrorBarsColor(Color.BLACK);

        List<String> labels = scores.stream().map(Score::label).distinct().toList();
        for (int threads : new TreeSet<>(scores.stream().map(Score::threads).toList())) {
            List<Score> atThreads = labels.stream().map(label -> find(scores, label, threads)).toList();
            chart.addSeries(threads == 1 ? "1 thread" : threads + " threads",
                            labels,
                            atThreads.stream().map(Score::score).toList(),
                            atThreads.stream().map(ThroughputChart::errorBar).toList());
        }
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }

    private static double errorBar(Score score) {
        return Double.isNaN(score.error()) ? 0 : score.error();
    }

    /** The score of {@code label} at {@code threads}, or a zero bar if that combination did not run. */
    private static Score find(List<Score> scores, String label, int threads) {
        return scores.stream()
                     .filter(score -> score.label().equals(label) && score.threads() == threads)
                     .findFirst()
                     .orElse(new Score("", "", label, threads, 0, 0, Double.NaN));
    }
}
