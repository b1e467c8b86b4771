package io.github.ringbus.behaviour;

import io.github.ringbus.fixtures.RingbusFixture;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.Topology;
import io.github.ringbus.fixtures.RingbusFixture.Outcome;
import io.github.ringbus.fixtures.RingbusFixture.Tally;
import io.github.ringbus.fixtures.FaultyStorageEngine.HeldAppend;
import io.github.ringbus.PublishMode;
import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import org.axonframework.eventhandling.EventMessage;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How events reach the event store's subscribers (subscribing event processors, registered with
 * {@code eventStore.subscribe}): each command's events as one list, in order, and never the events of a command whose
 * handler failed. A callback fires only after the publish stage is done with its command, so what a subscriber has
 * received is final once the callbacks have fired.
 */
class PublishTest {

    private RingbusFixture ring;
    private final List<List<Object>> received = new CopyOnWriteArrayList<>();

    @AfterEach
    void shutDown() {
        if (ring != null) {
            ring.close();
        }
    }

    private void subscribe() {
        ring.ringEventStore().subscribe(events -> received.add(
                events.stream().map(EventMessage::getPayload).collect(Collectors.toList())));
    }

    private List<Object> receivedPayloads() {
        return received.stream().flatMap(List::stream).collect(Collectors.toList());
    }

    @Test
    void subscribersReceiveEachCommandsEventsTogetherAndInOrder() {
        ring = RingbusFixture.started();
        subscribe();

        ring.sendAndWait(new Tally.Start("t"));
        ring.sendAndWait(new Tally.AddAll("t", List.of(1L, 2L, 3L)));
        ring.sendAndWait(new Tally.AddAll("t", List.of(4L, 5L)));

        assertThat(received).containsExactly(
                List.of(new Tally.Started("t")),
                List.of(new Tally.Added("t", 1), new Tally.Added("t", 2), new Tally.Added("t", 3)),
                List.of(new Tally.Added("t", 4), new Tally.Added("t", 5)));
    }

    @Test
    void subscribersReceiveOneAggregatesEventsInDispatchOrderWhenCommandsAreSentBackToBack() {
        ring = RingbusFixture.started();
        subscribe();
        ring.sendAndWait(new Open("a"));

        List<Outcome> deposits = new ArrayList<>();
        for (long amount = 1; amount <= 300; amount++) {
            deposits.add(ring.send(new Deposit("a", amount)));
        }
        deposits.forEach(Outcome::awaitSuccess);

        List<Object> expected = new ArrayList<>();
        expected.add(new Opened("a"));
        LongStream.rangeClosed(1, 300).forEach(amount -> expected.add(new Deposited("a", amount)));
        assertThat(receivedPayloads()).containsExactlyElementsOf(expected);
        assertThat(receivedPayloads()).containsExactlyElementsOf(ring.storedPayloads("a"));
    }

    @Test
    void eventsOfAFailedHandlerAreNeverPublished() {
        ring = RingbusFixture.started();
        subscribe();
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 10));

        assertThat(ring.sendAndWait(new DepositThenFail("a", 1000)).isExceptional()).isTrue();
        ring.sendAndWait(new Deposit("a", 1));

        assertThat(receivedPayloads()).containsExactly(
                new Opened("a"), new Deposited("a", 10), new Deposited("a", 1));
    }

    @Test
    void eventsOfACommandWithACheckedFailureThatDoesNotRollBackArePublished() {
        // Axon's default rollback configuration (unchecked exceptions) keeps the events of a handler that fails
        // with a checked exception: they are stored and published, and the caller still receives the exception.
        ring = RingbusFixture.started();
        subscribe();
        ring.sendAndWait(new Tally.Start("t"));

        Throwable failure = ring.send(new Tally.AddThenFailChecked("t", 7)).awaitFailure();

        assertThat(failure).isInstanceOf(Tally.TallyException.class).hasMessageContaining("adding 7 to t");
        assertThat(receivedPayloads()).containsExactly(new Tally.Started("t"), new Tally.Added("t", 7));
        assertThat(ring.storedPayloads("t")).containsExactly(new Tally.Started("t"), new Tally.Added("t", 7));
    }

    @Test
    void withAfterStoreACommandWhoseAppendFailsIsNotPublished() {
        ring = RingbusFixture.started(b -> b.publishMode(PublishMode.AFTER_STORE));
        subscribe();
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 10));

        ring.engine.failAppends(true);
        Throwable failure = ring.send(new Deposit("a", 5)).awaitFailure();
        ring.engine.failAppends(false);
        ring.sendAndWait(new Deposit("a", 1));

        assertThat(failure).isInstanceOf(EventStoreException.class);
        assertThat(receivedPayloads()).containsExactly(
                new Opened("a"), new Deposited("a", 10), new Deposited("a", 1));
        assertThat(receivedPayloads()).containsExactlyElementsOf(ring.storedPayloads("a"));
    }

    /** COMPACT runs publish after the store on one thread: PARALLEL there publishes only what was stored. */
    @Test
    void withParallelOnTheCompactTopologyACommandWhoseAppendFailsIsNotPublished() {
        ring = RingbusFixture.started(b -> b.publishMode(PublishMode.PARALLEL).topology(Topology.COMPACT));
        subscribe();
        ring.sendAndWait(new Open("a"));

        ring.engine.failAppends(true);
        Throwable failure = ring.send(new Deposit("a", 5)).awaitFailure();
        ring.engine.failAppends(false);
        ring.sendAndWait(new Deposit("a", 1));

        assertThat(failure).isInstanceOf(EventStoreException.class);
        assertThat(receivedPayloads()).containsExactly(new Opened("a"), new Deposited("a", 1));
    }

    @Test
    void withAfterStoreASubscriberFindsTheEventsItReceivesAlreadyInTheStore() {
        ring = RingbusFixture.started(b -> b.publishMode(PublishMode.AFTER_STORE));
        List<Boolean> storedWhenReceived = new CopyOnWriteArrayList<>();
        ring.ringEventStore().subscribe(events -> events.forEach(event -> storedWhenReceived.add(
                ring.storedEvents("a").stream().anyMatch(s -> s.getIdentifier().equals(event.getIdentifier())))));

        ring.sendAndWait(new Open("a"));
        for (int i = 0; i < 20; i++) {
            ring.send(new Deposit("a", 1));
        }
        ring.sendAndWait(new Deposit("a", 1));

        assertThat(storedWhenReceived).hasSize(22).containsOnly(true);
    }

    /**
     * {@link PublishMode#PARALLEL} (the default) publishes a command's events beside the store stage, without waiting
     * for the append: a subscriber may therefore receive events whose append then fails. The caller of that command
     * still receives the store's failure, and the events are not in the store (tracking processors never see them).
     * Here the append is held in the engine until the subscriber has received the event, so this is not a race: the
     * publication must happen while the append is still under way.
     */
    @Test
    void withParallelASubscriberMayReceiveEventsWhoseAppendThenFails() throws Exception {
        // Store and publish side by side need a thread each: the FULL topology (COMPACT publishes after the store).
        ring = RingbusFixture.started(b -> b.publishMode(PublishMode.PARALLEL).topology(Topology.FULL));
        subscribe();
        CountDownLatch depositPublished = new CountDownLatch(1);
        ring.ringEventStore().subscribe(events -> {
            if (events.stream().anyMatch(e -> new Deposited("a", 5).equals(e.getPayload()))) {
                depositPublished.countDown();
            }
        });
        ring.sendAndWait(new Open("a"));

        HeldAppend failing = ring.engine.holdAndFailNextAppend();
        Outcome deposit = ring.send(new Deposit("a", 5));
        failing.awaitStarted();
        assertThat(depositPublished.await(10, TimeUnit.SECONDS))
                .as("published while its append is still held in the engine").isTrue();
        assertThat(deposit.isDone()).as("the callback waits for the store stage").isFalse();
        failing.release();

        assertThat(deposit.awaitFailure()).isInstanceOf(EventStoreException.class)
                                          .hasMessageContaining(FaultyStorageEngine.INJECTED);
        assertThat(receivedPayloads()).containsExactly(new Opened("a"), new Deposited("a", 5));
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
    }

    @Test
    void withParallelASubscriberFailureIsReportedToTheCallerWhileTheEventsStayStored() {
        // As documented on PublishMode.PARALLEL: the store stage appends the events beside the publish stage; a
        // subscriber's exception is reported to the command's caller, and the aggregate keeps the events.
        ring = RingbusFixture.started(b -> b.publishMode(PublishMode.PARALLEL));
        ring.ringEventStore().subscribe(events -> events.forEach(event -> {
            if (new Deposited("a", 13).equals(event.getPayload())) {
                throw new IllegalStateException("subscriber refuses " + event.getPayload());
            }
        }));
        ring.sendAndWait(new Open("a"));

        Throwable failure = ring.send(new Deposit("a", 13)).awaitFailure();

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessageContaining("subscriber refuses");
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 13));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(14L);
    }

    /**
     * By default (as on Axon's own buses, where a subscribing processor runs in the command's Unit of Work before the
     * commit) a subscriber that throws fails its command, and nothing of the command is stored: the aggregate goes on
     * from the state before it.
     */
    @Test
    void subscriberThatThrowsFailsItsCommandAndNothingOfItIsStored() throws Exception {
        ring = RingbusFixture.started();
        ring.ringEventStore().subscribe(events -> events.forEach(event -> {
            if (new Deposited("a", 13).equals(event.getPayload())) {
                throw new IllegalStateException("subscriber refuses " + event.getPayload());
            }
        }));
        ring.sendAndWait(new Open("a"));

        Throwable failure = ring.send(new Deposit("a", 13)).awaitFailure();

        assertThat(failure).isInstanceOf(IllegalStateException.class).hasMessageContaining("subscriber refuses");
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(1L);
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 1));
    }

    /**
     * A subscriber that throws for one command of a store batch fails that command alone: nothing of it is stored or
     * seen by a tracking processor, and the batch's other commands are stored exactly once. The other commands'
     * subscribers may be called again for the retry (see PublishMode.IN_TRANSACTION); here the subscriber, with
     * nothing to roll back, simply records what it was given.
     */
    @Test
    void subscriberThatThrowsForOneCommandOfABatchFailsOnlyThatCommandAndTheOthersAreStoredOnce() throws Exception {
        ring = RingbusFixture.started(b -> b.handlerThreads(1));
        List<Object> given = new CopyOnWriteArrayList<>();
        ring.ringEventStore().subscribe(events -> events.forEach(event -> {
            given.add(event.getPayload());
            if (new Deposited("acc-4", 40).equals(event.getPayload())) {
                throw new IllegalStateException("subscriber refuses " + event.getPayload());
            }
        }));
        ring.sendAndWait(new Open("gate"));
        for (int i = 0; i < 8; i++) {
            ring.sendAndWait(new Open("acc-" + i));
        }
        Object[] deposits = new Object[8];
        for (int i = 0; i < 8; i++) {
            deposits[i] = new Deposit("acc-" + i, i * 10L);
        }

        try (TrackedPayloads tracked = new TrackedPayloads(ring.eventStore)) {
            List<Outcome> outcomes = ring.sendAsOneBatch(new Deposit("gate", 1), deposits);

            for (int i = 0; i < 8; i++) {
                if (i == 4) {
                    assertThat(outcomes.get(i).awaitFailure()).isInstanceOf(IllegalStateException.class)
                                                              .hasMessageContaining("subscriber refuses");
                    assertThat(ring.storedPayloads("acc-4")).containsExactly(new Opened("acc-4"));
                } else {
                    assertThat(outcomes.get(i).awaitSuccess()).isEqualTo(i * 10L);
                    assertThat(ring.storedPayloads("acc-" + i)).containsExactly(
                            new Opened("acc-" + i), new Deposited("acc-" + i, i * 10L));
                    assertThat(given).contains(new Deposited("acc-" + i, i * 10L));
                }
            }
            ring.sendAndWait(new Deposit("acc-4", 1));
            List<Object> seen = tracked.awaitThrough(new Deposited("acc-4", 1));
            assertThat(seen).doesNotContain(new Deposited("acc-4", 40));
            for (int i = 0; i < 8; i++) {
                if (i != 4) {
                    assertThat(seen).containsOnlyOnce(new Deposited("acc-" + i, i * 10L));
                }
            }
        }
        assertThat(ring.allStoredPayloads()).doesNotContain(new Deposited("acc-4", 40));
    }
}
