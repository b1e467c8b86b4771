package io.github.ringbus;

import com.lmax.disruptor.BatchEventProcessor;
import com.lmax.disruptor.BatchEventProcessorBuilder;
import com.lmax.disruptor.BusySpinWaitStrategy;
import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.SleepingWaitStrategy;
import com.lmax.disruptor.WaitStrategy;
import com.lmax.disruptor.YieldingWaitStrategy;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What {@link ReRunBarrier} relies on in the Disruptor, pinned with a real ring and {@link BatchEventProcessor}, for
 * every wait strategy the bus offers: a posted request wakes a handler thread that waits for commands, and the
 * processor answers the barrier's {@code TimeoutException} by calling the handler's {@code onTimeout} and waiting
 * again (not by ending); a halt (the Disruptor's alert without a request) ends the processor's run; and a halt that
 * comes with a request is not lost, once the bus says it stops. A Disruptor that changes any of these fails here.
 */
class ReRunBarrierTest {

    /** The wait strategies of {@link WaitStrategyChoice}, as the pipeline makes them. */
    enum Strategy {
        ADAPTIVE(AdaptiveWaitStrategy::new),
        BLOCKING(AdaptiveWaitStrategy::blocking),
        SLEEPING(SleepingWaitStrategy::new),
        YIELDING(YieldingWaitStrategy::new),
        BUSY_SPIN(BusySpinWaitStrategy::new);

        private final Supplier<WaitStrategy> make;

        Strategy(Supplier<WaitStrategy> make) {
            this.make = make;
        }
    }

    /** A handler thread's processor over a ring no one publishes to: it waits for commands from its start. */
    private static final class IdleHandlerThread implements EventHandler<CommandSlot> {

        final CountDownLatch served = new CountDownLatch(1);
        final AtomicInteger timeouts = new AtomicInteger();
        volatile boolean stopping;
        final ReRunBarrier<ReRuns.Request> barrier;
        final BatchEventProcessor<CommandSlot> processor;
        final Thread thread;

        IdleHandlerThread(Strategy strategy) {
            RingBuffer<CommandSlot> ring = RingBuffer.createMultiProducer(() -> new CommandSlot(null), 8,
                                                                          strategy.make.get());
            barrier = new ReRunBarrier<>(ring.newBarrier(), () -> stopping);
            processor = new BatchEventProcessorBuilder().build(ring, barrier, this);
            ring.addGatingSequences(processor.getSequence());
            thread = new Thread(processor, "rerun-barrier-test-" + strategy);
            thread.setDaemon(true);
            thread.start();
        }

        @Override
        public void onEvent(CommandSlot slot, long sequence, boolean endOfBatch) {
        }

        @Override
        public void onTimeout(long sequence) {
            timeouts.incrementAndGet();
            if (barrier.poll() != null) {
                served.countDown();
            }
        }

        void awaitWaiting() throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!processor.isRunning() && System.nanoTime() < deadline) {
                Thread.sleep(1);
            }
            Thread.sleep(20); // in its wait strategy by now
        }
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void aPostedRequestWakesTheWaitingHandlerThreadWhichServesItInOnTimeoutAndWaitsAgain(Strategy strategy)
            throws Exception {
        IdleHandlerThread handler = new IdleHandlerThread(strategy);
        try {
            handler.awaitWaiting();
            handler.barrier.post(new ReRuns.Request(null, 0));

            assertThat(handler.served.await(5, TimeUnit.SECONDS)).as("the request served").isTrue();
            Thread.sleep(20);
            assertThat(handler.processor.isRunning()).as("the processor waits again").isTrue();
            assertThat(handler.thread.isAlive()).isTrue();
        } finally {
            handler.processor.halt();
            handler.thread.join(5_000);
        }
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void aHaltWithoutARequestEndsTheProcessorsRun(Strategy strategy) throws Exception {
        IdleHandlerThread handler = new IdleHandlerThread(strategy);
        handler.awaitWaiting();

        handler.processor.halt();

        handler.thread.join(5_000);
        assertThat(handler.thread.isAlive()).as("the handler thread still runs after the halt").isFalse();
        assertThat(handler.timeouts).as("no request: onTimeout never called").hasValue(0);
    }

    @ParameterizedTest
    @EnumSource(Strategy.class)
    void aHaltThatComesWithARequestEndsTheRunOnceTheBusStops(Strategy strategy) throws Exception {
        IdleHandlerThread handler = new IdleHandlerThread(strategy);
        handler.awaitWaiting();

        // As the bus stops: the stop flag first, then a request and the halt race to alert the barrier.
        handler.stopping = true;
        handler.barrier.post(new ReRuns.Request(null, 0));
        handler.processor.halt();

        handler.thread.join(5_000);
        assertThat(handler.thread.isAlive()).as("the handler thread still runs after the halt").isFalse();
    }
}
