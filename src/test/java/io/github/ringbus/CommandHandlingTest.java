package io.github.ringbus;

import io.github.ringbus.fixtures.AccountCommands.Deposit;
import io.github.ringbus.fixtures.AccountCommands.DepositThenFail;
import io.github.ringbus.fixtures.AccountCommands.Open;
import io.github.ringbus.fixtures.AccountCommands.Reject;
import io.github.ringbus.fixtures.AccountCommands.Withdraw;
import io.github.ringbus.fixtures.AccountEvents.Deposited;
import io.github.ringbus.fixtures.AccountEvents.Opened;
import io.github.ringbus.fixtures.AccountEvents.Withdrawn;
import io.github.ringbus.fixtures.Account;
import io.github.ringbus.fixtures.RingbusFixture;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.eventhandling.DomainEventMessage;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;

/** How commands for event-sourced aggregates are handled, stored and answered. */
class CommandHandlingTest {

    private final RingbusFixture ring = RingbusFixture.started();

    @AfterEach
    void shutDown() {
        ring.close();
    }

    @Test
    void creationCommandStoresTheAggregatesFirstEvent() {
        CommandResultMessage<?> result = ring.sendAndWait(new Open("a"));

        assertThat(result.isExceptional()).isFalse();
        assertThat(result.getPayload()).isEqualTo("a");
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"));
    }

    @Test
    void callbackReceivesTheHandlersReturnValue() {
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 5));

        CommandResultMessage<?> result = ring.sendAndWait(new Deposit("a", 7));

        assertThat(result.getPayload()).isEqualTo(12L);
    }

    @Test
    void commandsForOneAggregateAreHandledInDispatchOrder() {
        ring.sendAndWait(new Open("a"));
        List<CompletableFuture<CommandResultMessage<Object>>> results = new ArrayList<>();
        for (long amount = 1; amount <= 500; amount++) {
            results.add(ring.sendForResult(new Deposit("a", amount)));
        }
        results.forEach(CompletableFuture::join);

        List<? extends DomainEventMessage<?>> stored = ring.storedEvents("a");
        assertThat(stored).extracting(DomainEventMessage::getSequenceNumber)
                          .containsExactlyElementsOf(LongStream.rangeClosed(0, 500).boxed().collect(
                                  Collectors.toList()));
        assertThat(stored.subList(1, stored.size())).extracting(e -> ((Deposited) e.getPayload()).amount())
                                                    .containsExactlyElementsOf(LongStream.rangeClosed(1, 500).boxed()
                                                                                         .collect(Collectors.toList()));
        // Each deposit saw the sum of the deposits before it.
        assertThat(results.get(499).join().getPayload()).isEqualTo(500L * 501 / 2);
    }

    @Test
    void aCacheSmallerThanTheAggregatesInFlightNeverReadsAnAggregateWhoseCommandsAreStillInTheRing() {
        try (RingbusFixture small = RingbusFixture.started(b -> b.cacheSize(1).readAheadThreads(0))) {
            for (int account = 0; account < 3; account++) {
                small.sendAndWait(new Open("small-" + account));
            }
            List<CompletableFuture<CommandResultMessage<Object>>> results = new ArrayList<>();
            for (long amount = 1; amount <= 600; amount++) {
                results.add(small.sendForResult(new Deposit("small-" + (amount % 3), amount)));
            }

            long[] balances = new long[3];
            for (int i = 0; i < results.size(); i++) {
                long amount = i + 1;
                balances[(int) (amount % 3)] += amount;
                assertThat(results.get(i).join().getPayload()).as("deposit %d", amount)
                                                              .isEqualTo(balances[(int) (amount % 3)]);
            }
            for (int account = 0; account < 3; account++) {
                assertThat(small.storedSequenceNumbers("small-" + account))
                        .containsExactlyElementsOf(LongStream.rangeClosed(0, 200).boxed().collect(Collectors.toList()));
            }
        }
    }

    @Test
    void handlerFailureAfterApplyReachesTheCallbackAndLeavesNoTrace() {
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 10));

        CommandResultMessage<?> failed = ring.sendAndWait(new DepositThenFail("a", 1000));

        assertThat(failed.isExceptional()).isTrue();
        assertThat(failed.exceptionResult()).isInstanceOf(IllegalStateException.class)
                                            .hasMessageContaining("fails on purpose");
        assertThat(ring.storedPayloads("a")).containsExactly(new Opened("a"), new Deposited("a", 10));
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(11L);
    }

    @Test
    void handlerFailureAfterApplyRestoresStateIncludingEarlierCommandsNotYetStored() {
        ring.sendAndWait(new Open("a"));
        // Dispatched back to back: the failing command runs while earlier deposits may still be on their way to
        // the store; the restored state must include them.
        List<CompletableFuture<CommandResultMessage<Object>>> results = new ArrayList<>();
        for (int round = 0; round < 200; round++) {
            results.add(ring.sendForResult(new Deposit("a", 1)));
            results.add(ring.sendForResult(new DepositThenFail("a", 1000)));
        }
        CommandResultMessage<?> last = ring.sendAndWait(new Deposit("a", 1));

        for (int i = 0; i < results.size(); i++) {
            boolean failingCommand = i % 2 == 1;
            assertThat(results.get(i).join().isExceptional()).as("result %d", i).isEqualTo(failingCommand);
        }
        assertThat(last.getPayload()).isEqualTo(201L);
        assertThat(ring.storedEvents("a")).hasSize(202)
                                          .extracting(DomainEventMessage::getSequenceNumber)
                                          .containsExactlyElementsOf(LongStream.range(0, 202).boxed()
                                                                               .collect(Collectors.toList()));
    }

    @Test
    void handlerFailureBeforeApplyLeavesTheAggregateAsItWas() {
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 3));

        CommandResultMessage<?> failed = ring.sendAndWait(new Reject("a"));

        assertThat(failed.exceptionResult()).isInstanceOf(IllegalArgumentException.class);
        assertThat(ring.sendAndWait(new Deposit("a", 1)).getPayload()).isEqualTo(4L);
    }

    @Test
    void businessRuleViolationIsReportedAndStoresNothing() {
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Deposit("a", 3));

        CommandResultMessage<?> failed = ring.sendAndWait(new Withdraw("a", 4));

        assertThat(failed.exceptionResult()).isInstanceOf(Account.InsufficientFundsException.class);
        assertThat(ring.sendAndWait(new Withdraw("a", 3)).isExceptional()).isFalse();
        assertThat(ring.storedPayloads("a")).containsExactly(
                new Opened("a"), new Deposited("a", 3), new Withdrawn("a", 3));
    }

    @Test
    void failureOfOneAggregatesCommandLeavesOtherAggregatesUntouched() {
        ring.sendAndWait(new Open("a"));
        ring.sendAndWait(new Open("b"));
        ring.sendAndWait(new Deposit("b", 5));

        ring.sendAndWait(new DepositThenFail("a", 100));

        assertThat(ring.sendAndWait(new Deposit("b", 1)).getPayload()).isEqualTo(6L);
        assertThat(ring.storedPayloads("b")).containsExactly(
                new Opened("b"), new Deposited("b", 5), new Deposited("b", 1));
    }

    @Test
    void aggregateEvictedFromTheCacheIsReloadedFromTheStore() {
        RingbusFixture small = RingbusFixture.started(b -> b.cacheSize(2));
        try {
            for (int i = 0; i < 10; i++) {
                small.sendAndWait(new Open("acc-" + i));
                small.sendAndWait(new Deposit("acc-" + i, i));
            }
            for (int i = 0; i < 10; i++) {
                assertThat(small.sendAndWait(new Deposit("acc-" + i, 100)).getPayload()).isEqualTo(100L + i);
            }
        } finally {
            small.close();
        }
    }
}
