package io.github.ringbus.behaviour;

import io.github.ringbus.FullRingPolicy;
import io.github.ringbus.PublishMode;
import io.github.ringbus.RingFullException;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.Topology;
import io.github.ringbus.WaitStrategyChoice;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.modelling.command.AnnotationCommandTargetResolver;
import org.axonframework.modelling.command.CommandTargetResolver;
import org.axonframework.modelling.command.VersionedAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.UnaryOperator;
import java.util.stream.LongStream;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;

/**
 * Whatever user code does to the interrupt flag of the thread it runs on, and however a stage thread is interrupted
 * from outside, no stage skips, repeats or mixes up a command: every command is handled once, stored once in
 * order, and called back once with its own outcome; user code that runs after the interrupted code on the same
 * thread finds the flag clear.
 * <p>
 * Each case interrupts on one kind of stage thread, then lets every stage thread go idle (a waiting stage thread
 * is where an interrupt flag used to break the ring: its wait threw), then sends more commands than the ring has
 * slots to the same aggregate.
 */
class InterruptTest {

    /** Small, so that the commands after the interrupt wrap around the ring twice. */
    private static final int RING_SIZE = 64;
    private static final int AFTER = 150;
    /** The deposit whose user code interrupts its thread. */
    private static final long INTERRUPTING_AMOUNT = 1000;

    private RingbusFixture ring;

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    /** Where user code runs that leaves the interrupt flag set. */
    enum UserCodeOn {
        /** The command target resolver, on the preload stage's thread. */
        PRELOAD,
        /** A handler interceptor around the command handler, on a handler thread. */
        HANDLE,
        /** A subscribing event processor, called by the store stage in its transaction. */
        STORE,
        /** A subscribing event processor, called by the publish stage (publishMode PARALLEL). */
        PUBLISH,
        /** The caller's callback, on the complete stage's thread. */
        COMPLETE
    }

    static Stream<Arguments> userCodeOnEachStageInEachTopology() {
        List<Arguments> cases = new ArrayList<>();
        for (Topology topology : Topology.values()) {
            for (UserCodeOn stage : UserCodeOn.values()) {
                cases.add(Arguments.of(stage, topology));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "user code on {0}, {1}")
    @MethodSource("userCodeOnEachStageInEachTopology")
    void userCodeThatLeavesItsThreadInterruptedLosesNoCommand(UserCodeOn stage, Topology topology)
            throws InterruptedException {
        Hook hook = new Hook(stage);
        ring = RingbusFixture.started(hook.installedOn(b -> b.ringSize(RING_SIZE).topology(topology)
                                                             .fullRingPolicy(FullRingPolicy.BLOCK_WITH_TIMEOUT)
                                                             .fullRingTimeout(Duration.ofSeconds(10))));
        hook.subscribeTo(ring);
        ring.sendAndWait(new Open("a")).getPayload();

        Outcome interrupting = new Outcome();
        ring.bus.dispatch(asCommandMessage(new Deposit("a", INTERRUPTING_AMOUNT)), hook.callback(interrupting));
        assertThat(interrupting.awaitSuccess()).as("the interrupting command's own result")
                                              .isEqualTo(INTERRUPTING_AMOUNT);
        assertThat(interrupting.calls()).isEqualTo(1);
        assertThat(hook.interrupted.get()).as("the hook interrupted its thread").isTrue();
        idleLongEnoughForEveryStageToBlock();

        for (int i = 0; i < AFTER; i++) {
            Outcome deposit = new Outcome();
            ring.bus.dispatch(asCommandMessage(new Deposit("a", 1)), hook.callback(deposit));
            assertThat(deposit.awaitSuccess()).as("balance after deposit %s", i)
                                             .isEqualTo(INTERRUPTING_AMOUNT + i + 1);
            assertThat(deposit.calls()).isEqualTo(1);
        }

        assertThat(ring.storedSequenceNumbers("a"))
                .as("every command stored once, in order")
                .containsExactlyElementsOf(LongStream.rangeClosed(0, AFTER + 1).boxed().toList());
        assertThat(hook.flagSeenOnEntry).as("user code that ran after the interrupt found the flag set").isEmpty();
    }

    static Stream<Arguments> eachWaitStrategyInEachTopology() {
        List<Arguments> cases = new ArrayList<>();
        for (Topology topology : Topology.values()) {
            for (WaitStrategyChoice waitStrategy : WaitStrategyChoice.values()) {
                cases.add(Arguments.of(waitStrategy, topology));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource("eachWaitStrategyInEachTopology")
    void stageThreadsInterruptedFromOutsideLoseNoCommand(WaitStrategyChoice waitStrategy, Topology topology)
            throws InterruptedException {
        String prefix = "interrupted-" + waitStrategy + "-" + topology;
        // A ring wedged by a lost slot frees none again: a dispatcher gives up after 10 s rather than hang the test.
        ring = RingbusFixture.started(b -> b.ringSize(RING_SIZE).topology(topology).waitStrategy(waitStrategy)
                                            .threadNamePrefix(prefix)
                                            .fullRingPolicy(FullRingPolicy.BLOCK_WITH_TIMEOUT)
                                            .fullRingTimeout(Duration.ofSeconds(10)));
        ring.sendAndWait(new Open("a")).getPayload();

        // While idle (blocked or parked in their wait strategy):
        idleLongEnoughForEveryStageToBlock();
        List<Thread> stageThreads = threadsNamed(prefix);
        assertThat(stageThreads).isNotEmpty();
        stageThreads.forEach(Thread::interrupt);
        idleLongEnoughForEveryStageToBlock();

        // And again and again while commands flow through them:
        AtomicBoolean loaded = new AtomicBoolean(true);
        Thread interrupter = new Thread(() -> {
            while (loaded.get()) {
                stageThreads.forEach(Thread::interrupt);
                try {
                    Thread.sleep(1);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "interrupter");
        interrupter.start();
        List<Outcome> deposits = new ArrayList<>();
        try {
            for (int i = 0; i < AFTER * 4; i++) {
                deposits.add(ring.send(new Deposit("a", 1)));
            }
            for (int i = 0; i < deposits.size(); i++) {
                assertThat(deposits.get(i).awaitSuccess()).as("balance after deposit %s", i).isEqualTo(i + 1L);
            }
        } finally {
            loaded.set(false);
            interrupter.join();
        }

        assertThat(deposits).allSatisfy(deposit -> assertThat(deposit.calls()).isEqualTo(1));
        assertThat(ring.storedSequenceNumbers("a"))
                .containsExactlyElementsOf(LongStream.rangeClosed(0, AFTER * 4L).boxed().toList());
        ring.assertStillHandlesValidCommands();
    }

    /**
     * A dispatcher waiting for a full ring (policy {@code BLOCK}) whose thread is interrupted stops waiting, as any
     * blocking call does: its command fails with a {@link RingFullException} that says so and never enters the ring,
     * and the thread keeps its interrupt flag for its owner. It neither spins nor waits on.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Topology.class)
    void aDispatcherInterruptedWhileWaitingForAFullRingGivesUpAndKeepsItsFlag(Topology topology)
            throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1).topology(topology));
        try {
            ring.bus.subscribe(RingbusFixture.BLOCK, RingbusFixture.blockingHandler(release));
            List<Outcome> blocked = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                blocked.add(ring.send(RingbusFixture.blockCommand("blocked-" + i)));
            }
            assertThat(ring.bus.remainingCapacity()).isZero();
            Outcome refused = new Outcome();
            AtomicBoolean flagKept = new AtomicBoolean();
            Thread dispatcher = new Thread(() -> {
                ring.bus.dispatch(asCommandMessage(new Open("never")), refused);
                flagKept.set(Thread.currentThread().isInterrupted());
            }, "interrupted-dispatcher");
            dispatcher.start();
            awaitState(dispatcher, Thread.State.TIMED_WAITING);

            dispatcher.interrupt();
            dispatcher.join(TimeUnit.SECONDS.toMillis(5));

            assertThat(dispatcher.isAlive()).as("dispatch still waiting 5 s after its interrupt").isFalse();
            assertThat(flagKept.get()).as("the dispatcher's interrupt flag after dispatch returned").isTrue();
            assertThat(refused.awaitFailure()).isInstanceOf(RingFullException.class)
                                              .hasMessageContaining("interrupted")
                                              .hasMessageContaining("was not handled");
            release.countDown();
            for (Outcome outcome : blocked) {
                outcome.awaitSuccess();
            }
            ring.assertStillHandlesValidCommands();
            assertThat(ring.storedPayloads("never")).as("the refused command's events").isEmpty();
            assertThat(refused.calls()).isEqualTo(1);
        } finally {
            release.countDown();
        }
    }

    /**
     * A dispatcher that waits for a full ring parks between looks at the ring instead of spinning, so that the
     * threads it waits for have the cores: over a second of waiting it uses at most a few percent of one core.
     */
    @Test
    void aDispatcherWaitingForAFullRingUsesLittleCpu() throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        ring = RingbusFixture.started(b -> b.ringSize(4).handlerThreads(1));
        try {
            ring.bus.subscribe(RingbusFixture.BLOCK, RingbusFixture.blockingHandler(release));
            for (int i = 0; i < 4; i++) {
                ring.send(RingbusFixture.blockCommand("blocked-" + i));
            }
            Outcome waiting = new Outcome();
            Thread dispatcher = new Thread(() -> ring.bus.dispatch(asCommandMessage(new Open("later")), waiting),
                                           "waiting-dispatcher");
            dispatcher.start();
            awaitState(dispatcher, Thread.State.TIMED_WAITING);
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long cpuBefore = threads.getThreadCpuTime(dispatcher.getId());
            long wallBefore = System.nanoTime();
            Thread.sleep(1000);
            long cpu = threads.getThreadCpuTime(dispatcher.getId()) - cpuBefore;
            long wall = System.nanoTime() - wallBefore;
            release.countDown();
            waiting.awaitSuccess();

            double share = (double) cpu / wall;
            System.out.printf("waiting dispatcher used %.2f%% of a core%n", share * 100);
            assertThat(share).as("share of a core the waiting dispatcher used").isLessThan(0.05);
        } finally {
            release.countDown();
        }
    }

    private static void awaitState(Thread thread, Thread.State state) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (thread.getState() != state) {
            assertThat(System.nanoTime()).as("%s to reach %s", thread.getName(), state).isLessThan(deadline);
            Thread.sleep(1);
        }
    }

    /**
     * Long enough for every stage thread's wait to pass its spinning, yielding and parking phases and block (the
     * adaptive strategy blocks after 1 ms without commands).
     */
    private static void idleLongEnoughForEveryStageToBlock() throws InterruptedException {
        Thread.sleep(50);
    }

    private static List<Thread> threadsNamed(String prefix) {
        return Thread.getAllStackTraces().keySet().stream()
                     .filter(thread -> thread.getName().startsWith(prefix + "-"))
                     .toList();
    }

    /**
     * User code on one stage that interrupts its own thread for the interrupting deposit and returns normally, and
     * records, for every later command, whether it found its thread's flag set when it was called.
     */
    private static final class Hook {

        private final UserCodeOn stage;
        final AtomicBoolean interrupted = new AtomicBoolean();
        final Queue<String> flagSeenOnEntry = new ConcurrentLinkedQueue<>();

        Hook(UserCodeOn stage) {
            this.stage = stage;
        }

        UnaryOperator<RingCommandBus.Builder> installedOn(UnaryOperator<RingCommandBus.Builder> settings) {
            return builder -> {
                RingCommandBus.Builder configured = settings.apply(builder);
                return switch (stage) {
                    case PRELOAD -> configured.commandTargetResolver(targetResolver());
                    case HANDLE -> configured.handlerInterceptor((unitOfWork, chain) -> {
                        seen(unitOfWork.getMessage().getPayload());
                        Object result = chain.proceed();
                        interruptFor(unitOfWork.getMessage().getPayload());
                        return result;
                    });
                    case STORE -> configured.publishMode(PublishMode.IN_TRANSACTION);
                    case PUBLISH -> configured.publishMode(PublishMode.PARALLEL);
                    case COMPLETE -> configured;
                };
            };
        }

        void subscribeTo(RingbusFixture ring) {
            if (stage == UserCodeOn.STORE || stage == UserCodeOn.PUBLISH) {
                ring.eventStore.subscribe(events -> {
                    for (EventMessage<?> event : events) {
                        seen(event.getPayload());
                        interruptFor(event.getPayload());
                    }
                });
            }
        }

        CommandCallback<Object, Object> callback(Outcome outcome) {
            if (stage != UserCodeOn.COMPLETE) {
                return outcome;
            }
            return (CommandMessage<?> command, CommandResultMessage<?> result) -> {
                seen(command.getPayload());
                interruptFor(command.getPayload());
                outcome.onResult(command, result);
            };
        }

        private CommandTargetResolver targetResolver() {
            CommandTargetResolver annotated = AnnotationCommandTargetResolver.builder().build();
            return new CommandTargetResolver() {
                @Override
                public VersionedAggregateIdentifier resolveTarget(CommandMessage<?> command) {
                    seen(command.getPayload());
                    VersionedAggregateIdentifier target = annotated.resolveTarget(command);
                    interruptFor(command.getPayload());
                    return target;
                }
            };
        }

        private void seen(Object payload) {
            if (interrupted.get() && Thread.currentThread().isInterrupted()) {
                flagSeenOnEntry.add(payload + " on " + Thread.currentThread().getName());
            }
        }

        private void interruptFor(Object payload) {
            boolean interrupting = payload instanceof Deposit deposit && deposit.amount() == INTERRUPTING_AMOUNT
                    || payload instanceof Deposited deposited && deposited.amount() == INTERRUPTING_AMOUNT;
            if (interrupting && interrupted.compareAndSet(false, true)) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
