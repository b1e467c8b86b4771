package io.github.ringbus.benchmarks;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.SleepingWaitStrategy;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.ProducerType;
import com.lmax.disruptor.util.DaemonThreadFactory;

/**
 * The upper limit for a pipeline of ringbus's shape: a raw Disruptor (3.4.4, the one on an Axon
 * application's class path) whose stages do nothing but pass a {@code long} along.
 *
 * <pre>
 *                        +--> store ----+
 *   preload --> handle --+              +--> complete --> BatchCompletion
 *                        +--> publish --+
 * </pre>
 *
 * Many threads may {@link #publish} at once; the last stage reports each value to the
 * {@link BatchCompletion} it came with. Ring size and wait strategy are ringbus's defaults (see
 * {@code RingCommandBus.Builder}): keep them in step.
 */
public final class DiamondPipeline {

    /** Slots in the ring, as in ringbus by default. */
    public static final int RING_SIZE = 4096;

    private final Disruptor<Slot> disruptor;
    private final RingBuffer<Slot> ring;

    /** Builds and starts the pipeline: five threads that spin, yield, then sleep when idle. */
    @SuppressWarnings("unchecked")
    public DiamondPipeline() {
        disruptor = new Disruptor<>(Slot::new, RING_SIZE, DaemonThreadFactory.INSTANCE, ProducerType.MULTI,
                                    new SleepingWaitStrategy());
        disruptor.handleEventsWith(new PassAlong())
                 .then(new PassAlong())
                 .then(new PassAlong(), new PassAlong())
                 .then(DiamondPipeline::complete);
        ring = disruptor.start();
    }

    /** Sends {@code value} through the pipeline; {@code completion} hears when it is through. */
    public void publish(long value, BatchCompletion completion) {
        long sequence = ring.next();
        Slot slot = ring.get(sequence);
        slot.value = value;
        slot.completion = completion;
        ring.publish(sequence);
    }

    /** Waits until every published value has been through, then stops the threads. */
    public void shutdown() {
        disruptor.shutdown();
    }

    private static void complete(Slot slot, long sequence, boolean endOfBatch) {
        BatchCompletion completion = slot.completion;
        slot.completion = null;
        completion.completed();
    }

    /** One slot of the ring. */
    private static final class Slot {
        long value;
        BatchCompletion completion;
    }

    /** A stage that reads the value, as a real stage would read its slot, and keeps a sum of what it saw. */
    private static final class PassAlong implements EventHandler<Slot> {
        private long sum;

        @Override
        public void onEvent(Slot slot, long sequence, boolean endOfBatch) {
            sum += slot.value;
        }
    }
}
