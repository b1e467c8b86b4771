package io.github.ringbus.benchmarks;

import com.lmax.disruptor.EventHandler;
import com.lmax.disruptor.RingBuffer;
import com.lmax.disruptor.YieldingWaitStrategy;
import com.lmax.disruptor.dsl.Disruptor;
import com.lmax.disruptor.dsl.ProducerType;
import com.lmax.disruptor.util.DaemonThreadFactory;
import java.util.concurrent.TimeUnit;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.GenericCommandResultMessage;
import org.axonframework.commandhandling.callbacks.FutureCallback;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The floor of {@code RoundTripBenchmark} for a bus that runs commands on threads of its own: what a round trip
 * costs with no command in it. One thread publishes an empty slot to a Disruptor ring and waits for it in Axon's
 * {@link FutureCallback}, as {@code sendAndWait} does; the slot passes {@code hops} stage threads, one after the
 * other, that do nothing but pass it on (yielding while they wait, as ringbus's stage threads do between
 * commands), and the last completes the callback. {@code hops=2} is ringbus's {@code COMPACT} topology with no
 * work in its stages (preload and handle on one thread, store and complete on the other); {@code hops=1} is any
 * bus that hands a command to one thread and takes the result back. Whatever a bus measures above its floor is its
 * own work; the floor itself is the machine's price of waking threads.
 */
@BenchmarkMode(Mode.SampleTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
public class HandOffFloorBenchmark {

    /** One slot of the ring: the callback of the round trip in flight. */
    static final class Slot {
        FutureCallback<Object, Object> callback;
    }

    /** A ring whose stage threads pass each slot on; the last one completes the slot's callback. */
    @State(Scope.Benchmark)
    public static class Ring {

        private static final CommandResultMessage<Object> RESULT = GenericCommandResultMessage.asCommandResultMessage(
                "done");

        @Param({"1", "2"})
        public int hops;

        Disruptor<Slot> disruptor;
        RingBuffer<Slot> ring;

        @Setup(Level.Trial)
        public void start() {
            disruptor = new Disruptor<>(Slot::new, 1024, DaemonThreadFactory.INSTANCE, ProducerType.MULTI,
                                        new YieldingWaitStrategy());
            EventHandler<Slot> passOn = (slot, sequence, endOfBatch) -> {
            };
            EventHandler<Slot> complete = (slot, sequence, endOfBatch) -> {
                FutureCallback<Object, Object> callback = slot.callback;
                slot.callback = null;
                callback.onResult(null, RESULT);
            };
            if (hops == 1) {
                disruptor.handleEventsWith(complete);
            } else {
                disruptor.handleEventsWith(passOn).then(complete);
            }
            ring = disruptor.start();
        }

        @TearDown(Level.Trial)
        public void stop() {
            disruptor.shutdown();
        }
    }

    @Benchmark
    @Threads(1)
    public Object roundTrip(Ring ring) {
        FutureCallback<Object, Object> result = new FutureCallback<>();
        long sequence = ring.ring.next();
        ring.ring.get(sequence).callback = result;
        ring.ring.publish(sequence);
        return result.getResult().getPayload();
    }
}
