package io.github.ringbus.benchmarks.report;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.knowm.xchart.BitmapEncoder;
import org.knowm.xchart.XYChart;
import org.knowm.xchart.XYChartBuilder;
import org.knowm.xchart.XYSeries;
import org.knowm.xchart.style.Styler;
import org.knowm.xchart.style.markers.SeriesMarkers;

/**
 * The scores as a dot plot of their iterations: for each bus and thread count (left to right as in the legend) one
 * dot per measured iteration and a black diamond at their median, on an axis from zero. Dots never fall below zero (a JMH interval, symmetric around the mean,
 * did: with three iterations its bars reached down to minus a million), and the spread is what was measured.
 */
final class SpreadChart {

    private SpreadChart() {
    }

    /** Draws {@code scores} to the PNG file {@code png}; needs {@code java.awt.headless=true} on a server. */
    static void write(List<Score> scores, String title, String unit, Path png) throws IOException {
        List<Score> ordered = scores.stream().sorted(Comparator.comparingInt(Score::threads)).toList();
        XYChart chart = new XYChartBuilder().width(1000).height(560).title(title).yAxisTitle(unit).build();
        chart.getStyler().setDefaultSeriesRenderStyle(XYSeries.XYSeriesRenderStyle.Scatter);
        chart.getStyler().setYAxisMin(0.0);
        chart.getStyler().setXAxisMin(-0.5);
        chart.getStyler().setXAxisMax(ordered.size() - 0.5);
        chart.getStyler().setYAxisDecimalPattern("#,###");
        chart.getStyler().setMarkerSize(9);
        List<String> names = ordered.stream()
                                    .map(s -> s.label() + (s.threads() == 1 ? ", 1 thread" : ", " + s.threads() + " threads"))
                                    .toList();
        chart.getStyler().setXAxisTicksVisible(false);
        chart.getStyler().setLegendPosition(Styler.LegendPosition.OutsideE);

        List<Double> medianX = new ArrayList<>();
        List<Double> medians = new ArrayList<>();
        for (int i = 0; i < ordered.size(); i++) {
            Score score = ordered.get(i);
            double[] values = score.iterations().length == 0 ? new double[]{score.score()} : score.iterations();
            List<Double> x = new ArrayList<>();
            List<Double> y = new ArrayList<>();
            for (double value : values) {
                x.add((double) i);
                y.add(value);
            }
            chart.addSeries(names.get(i), x, y).setMarker(SeriesMarkers.CIRCLE);
            medianX.add((double) i);
            medians.add(score.median());
        }
        chart.addSeries("median", medianX, medians).setMarker(SeriesMarkers.DIAMOND).setMarkerColor(java.awt.Color.BLACK);
        BitmapEncoder.saveBitmap(chart, png.toString(), BitmapEncoder.BitmapFormat.PNG);
    }
}
