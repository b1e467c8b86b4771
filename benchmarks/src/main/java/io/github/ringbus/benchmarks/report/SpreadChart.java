package io.github.ringbus.benchmarks.report;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.BoxChart;
import org.knowm.xchart.BoxChartBuilder;
import org.knowm.xchart.style.BoxStyler;

/**
 * The scores as box plots of their iterations: one box per bus and thread count, from the lowest to the highest
 * iteration, with the median and the quartiles. The y axis starts at zero and no box reaches below it (a JMH interval,
 * symmetric around the mean, did: with three iterations its bars reached down to minus a million).
 */
final class SpreadChart {

    private SpreadChart() {
    }

    /** Draws {@code scores} to the PNG file {@code png}; needs {@code java.awt.headless=true} on a server. */
    static void write(List<Score> scores, String title, String unit, Path png) throws IOException {
        BoxChart chart = new BoxChartBuilder().width(1000).height(560).title(title).yAxisTitle(unit).build();
        chart.getStyler().setBoxplotCalCulationMethod(BoxStyler.BoxplotCalCulationMethod.N_LESS_1_PLUS_1);
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setYAxisDecimalPattern("#,###");
        chart.getStyler().setShowWithinAreaPoint(false);
        for (Score score : scores) {
            double[] values = score.iterations().length == 0 ? new double[]{score.score()} : score.iterations();
            String name = score.label() + (score.threads() == 1 ? ", 1 thread" : ", " + score.threads() + " threads");
            chart.addSeries(name, Arrays.stream(values).boxed().toList());
        }
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
