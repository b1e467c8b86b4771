package io.github.ringbus.benchmarks.report;

/**
 * One row of a JMH result: a benchmark method run with one parameter value at one thread count.
 *
 * @param method     the benchmark method's simple name, e.g. {@code oneDispatcher}
 * @param parameter  the name of the benchmark's parameter, e.g. {@code bus}
 * @param label      the parameter's value, e.g. {@code ringbus}
 * @param threads    dispatching threads
 * @param score      operations per second
 * @param error      half-width of JMH's 99.9% confidence interval; {@code NaN} when JMH had too few
 *                   iterations to give one
 * @param bytesPerOp {@code gc.alloc.rate.norm} from JMH's {@code -prof gc}, or {@code NaN} without it
 * @param iterations the score of every measured iteration of every fork, sorted; empty when JMH gave none (its
 *                   sample-time mode)
 * @param secondary  JMH's secondary results by label (their mean over the iterations): the utilization profiler's
 *                   {@code util.*} and the server's own count ({@code server.rows}), where the run had them
 */
public record Score(String method, String parameter, String label, int threads, double score, double error,
                    double bytesPerOp, double[] iterations, java.util.Map<String, Double> secondary) {

    /** A score without secondary results. */
    public Score(String method, String parameter, String label, int threads, double score, double error,
                 double bytesPerOp, double[] iterations) {
        this(method, parameter, label, threads, score, error, bytesPerOp, iterations, java.util.Map.of());
    }

    /** @return the lowest iteration's score, or the score when there are no iterations */
    public double min() {
        return iterations.length == 0 ? score : iterations[0];
    }

    /** @return the median of the iterations' scores, or the score when there are no iterations */
    public double median() {
        int n = iterations.length;
        if (n == 0) {
            return score;
        }
        return n % 2 == 1 ? iterations[n / 2] : (iterations[n / 2 - 1] + iterations[n / 2]) / 2;
    }

    /** @return the highest iteration's score, or the score when there are no iterations */
    public double max() {
        return iterations.length == 0 ? score : iterations[iterations.length - 1];
    }

    /** @return whether JMH's 99.9 % interval is wider than a fifth of the score, or JMH gave none */
    public boolean wide() {
        return Double.isNaN(error) || error > score / 5;
    }
}
