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
 */
public record Score(String method, String parameter, String label, int threads, double score, double error,
                    double bytesPerOp) {
}
