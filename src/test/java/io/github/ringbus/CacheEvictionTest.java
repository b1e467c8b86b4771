package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.FaultyStorageEngine;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.GenericDomainEventMessage;
import org.junit.jupiter.api.Test;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RingCommandBus#evictCachedAggregates()}: what a node does when its share of the aggregates changes, so that
 * it never acts on a copy another node has changed since. An event appended to the store behind the bus's back stands
 * for the other node's command.
 */
class CacheEvictionTest {

    /** Another node's deposit of 100 on the account, appended straight to the store at the given sequence number. */
    private static void depositedElsewhere(RingbusFixture ring, String account, long sequenceNumber) {
        ring.engine.appendEvents(new GenericDomainEventMessage<>(
                "Account", account, sequenceNumber, new Deposited(account, 100)));
    }

    @Test
    void afterAnEvictionTheNextCommandSeesTheAggregateAsTheStoreHasIt() {
        try (RingbusFixture ring = RingbusFixture.started()) {
            ring.sendAndWait(new Open("acc"));
            ring.sendAndWait(new Deposit("acc", 10));
            depositedElsewhere(ring, "acc", 2);

            ring.bus.evictCachedAggregates();

            assertThat(ring.balanceOf("acc")).isEqualTo(110);
            assertThat(ring.sendAndWait(new Deposit("acc", 1)).getPayload()).isEqualTo(111L);
            assertThat(ring.storedSequenceNumbers("acc")).containsExactly(0L, 1L, 2L, 3L);
        }
    }

    @Test
    void withoutAnEvictionTheCachedCopyIsActedOn() {
        // What the eviction is for: the bus trusts its cache, so a change made elsewhere goes unseen.
        try (RingbusFixture ring = RingbusFixture.started()) {
            ring.sendAndWait(new Open("acc"));
            ring.sendAndWait(new Deposit("acc", 10));
            depositedElsewhere(ring, "acc", 2);

            assertThat(ring.balanceOf("acc")).isEqualTo(10);
        }
    }

    @Test
    void aCommandInFlightWhenTheEvictionIsRequestedIsNotLost() throws Exception {
        try (RingbusFixture ring = RingbusFixture.started()) {
            ring.sendAndWait(new Open("acc"));
            FaultyStorageEngine.HeldAppend held = ring.engine.holdNextAppend();
            CompletableFuture<CommandResultMessage<Object>> first = ring.sendForResult(new Deposit("acc", 10));
            held.awaitStarted(); // handled; its event is on its way to the store

            ring.bus.evictCachedAggregates();
            CompletableFuture<CommandResultMessage<Object>> second = ring.sendForResult(new Deposit("acc", 20));
            held.release();

            assertThat(first.get(10, TimeUnit.SECONDS).getPayload()).isEqualTo(10L);
            assertThat(second.get(10, TimeUnit.SECONDS).getPayload())
                    .as("read from the store (opened) plus the deposit of 10 still on its way there").isEqualTo(30L);
            assertThat(ring.storedSequenceNumbers("acc")).containsExactly(0L, 1L, 2L);
        }
    }

    @Test
    void anEvictionIsCarriedOutOncePerRequest() {
        try (RingbusFixture ring = RingbusFixture.started()) {
            ring.sendAndWait(new Open("acc"));
            ring.bus.evictCachedAggregates();
            ring.sendAndWait(new Deposit("acc", 10));
            depositedElsewhere(ring, "acc", 2);

            assertThat(ring.balanceOf("acc")).as("read once after the request, then cached again").isEqualTo(10);
        }
    }


    @Test
    void aRequestNamingOneAggregateIsAnsweredOnceAndOnlyForThatAggregate() {
        CacheEvictions evictions = new CacheEvictions();
        long seen = evictions.namedEpoch();

        evictions.request(String.class, "acc");

        assertThat(evictions.namedEpoch()).isNotEqualTo(seen);
        assertThat(evictions.epoch()).isZero();
        assertThat(evictions.namedSince(String.class, "other", seen)).isFalse();
        assertThat(evictions.namedSince(Integer.class, "acc", seen)).isFalse();
        assertThat(evictions.namedSince(String.class, "acc", seen)).isTrue();
        assertThat(evictions.namedSince(String.class, "acc", seen)).as("answered").isFalse();
    }

    @Test
    void pastTheMostNamedARequestNamesEveryAggregate() {
        CacheEvictions evictions = new CacheEvictions();
        for (int i = 0; i < CacheEvictions.MOST_NAMED; i++) {
            evictions.request(String.class, "acc-" + i);
        }
        assertThat(evictions.epoch()).isZero();

        evictions.request(String.class, "one-more");

        assertThat(evictions.epoch()).isOne();
        assertThat(evictions.namedSince(String.class, "acc-0", 0)).as("dropped").isFalse();
    }
}
