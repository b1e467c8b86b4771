package io.github.ringbus.benchmarks.report;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** A bus's share of the limit no bus can avoid is a share: never above 100 %, which would mean a wrong limit. */
class SummaryTest {

    private static Score throughput(double median) {
        return new Score("oneDispatcher", "ringbus", "ringbus", 1, median, 0, Double.NaN, new double[]{median});
    }

    @Test
    void aShareBelowTheLimitIsPrintedAsAPercentage() {
        assertEquals("50 %", Summary.shareOfLimit("throughput", throughput(500), 1_000, null));
    }

    @Test
    void aShareAboveTheLimitSaysTheLimitWasMeasuredWrongInsteadOfAPercentage() {
        // --quick gave ringbus at "174 %" of the limit: one unwarmed second measures no limit.
        assertEquals("above this run's limit: the limit was measured wrong (too short or disturbed)",
                     Summary.shareOfLimit("throughput", throughput(1_740), 1_000, null));
    }

    @Test
    void withoutALimitNoShareIsPrinted() {
        assertEquals("", Summary.shareOfLimit("throughput", throughput(1_740), Double.NaN, null));
    }
}
