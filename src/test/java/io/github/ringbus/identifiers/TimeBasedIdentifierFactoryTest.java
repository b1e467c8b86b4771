package io.github.ringbus.identifiers;

import org.axonframework.common.IdentifierFactory;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class TimeBasedIdentifierFactoryTest {

    private static final String CANONICAL_V7 =
            "[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}";

    private final TimeBasedIdentifierFactory factory = new TimeBasedIdentifierFactory();

    @Test
    void axonIdentifierFactoryGetInstanceReturnsThisFactory() {
        assertThat(IdentifierFactory.getInstance()).isInstanceOf(TimeBasedIdentifierFactory.class);
    }

    @Test
    void identifiersAreVersion7UuidsInCanonicalForm() {
        for (int i = 0; i < 1_000; i++) {
            String id = factory.generateIdentifier();

            assertThat(id).hasSize(36).matches(CANONICAL_V7);
            UUID uuid = UUID.fromString(id);
            assertThat(uuid.version()).isEqualTo(7);
            assertThat(uuid.variant()).isEqualTo(2);
            assertThat(uuid.toString()).isEqualTo(id);
        }
    }

    @Test
    void identifiersCarryTheirGenerationTimeInUnixEpochMilliseconds() {
        long before = System.currentTimeMillis();
        String id = factory.generateIdentifier();
        long after = System.currentTimeMillis();

        assertThat(millisOf(id)).isBetween(before, after);
    }

    @Test
    void identifiersGeneratedInSequenceOnOneThreadSortInGenerationOrder() {
        String[] ids = new String[200_000];
        for (int i = 0; i < ids.length; i++) {
            ids[i] = factory.generateIdentifier();
        }

        List<String> outOfOrder = new ArrayList<>();
        int sameMillisecondPairs = 0;
        for (int i = 1; i < ids.length; i++) {
            if (ids[i].compareTo(ids[i - 1]) <= 0) {
                outOfOrder.add("#" + i + " " + ids[i] + " after " + ids[i - 1]);
            }
            if (millisOf(ids[i]) == millisOf(ids[i - 1])) {
                sameMillisecondPairs++;
            }
        }
        assertThat(outOfOrder).isEmpty();
        assertThat(sameMillisecondPairs)
                .as("consecutive identifiers within one millisecond (the case where the generator counts up)")
                .isPositive();
    }

    @Test
    void identifiersKeepIncreasingWhenTheWallClockStepsBackwards() {
        AtomicLong wallClock = new AtomicLong(1_700_000_000_000L);
        TimeBasedIdentifierFactory factoryOnSteppingClock = new TimeBasedIdentifierFactory(wallClock::get);

        String beforeStep = factoryOnSteppingClock.generateIdentifier();
        wallClock.set(1_699_999_999_000L);
        String afterStep = factoryOnSteppingClock.generateIdentifier();
        String stillBehind = factoryOnSteppingClock.generateIdentifier();
        wallClock.set(1_700_000_000_001L);
        String caughtUp = factoryOnSteppingClock.generateIdentifier();

        assertThat(List.of(beforeStep, afterStep, stillBehind, caughtUp)).isSorted().doesNotHaveDuplicates();
        assertThat(millisOf(afterStep)).isEqualTo(1_700_000_000_000L);
        assertThat(millisOf(stillBehind)).isEqualTo(1_700_000_000_000L);
        assertThat(millisOf(caughtUp)).isEqualTo(1_700_000_000_001L);
    }

    @Test
    void identifiersFromFourConcurrentThreadsAreAllDistinct() throws Exception {
        int threads = 4;
        int perThread = 250_000;
        CountDownLatch start = new CountDownLatch(1);
        ExecutorService executor = Executors.newFixedThreadPool(threads);
        try {
            List<Future<String[]>> results = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                Callable<String[]> generate = () -> {
                    String[] ids = new String[perThread];
                    start.await();
                    for (int i = 0; i < perThread; i++) {
                        ids[i] = factory.generateIdentifier();
                    }
                    return ids;
                };
                results.add(executor.submit(generate));
            }
            start.countDown();

            String[] all = new String[threads * perThread];
            for (int t = 0; t < threads; t++) {
                System.arraycopy(results.get(t).get(60, TimeUnit.SECONDS), 0, all, t * perThread, perThread);
            }
            Arrays.sort(all);
            List<String> duplicated = new ArrayList<>();
            for (int i = 1; i < all.length; i++) {
                if (all[i].equals(all[i - 1])) {
                    duplicated.add(all[i]);
                }
            }

            assertThat(all).doesNotContainNull();
            assertThat(duplicated).isEmpty();
        } finally {
            executor.shutdownNow();
        }
    }

    private static long millisOf(String identifier) {
        return UUID.fromString(identifier).getMostSignificantBits() >>> 16;
    }

    @Test
    void withTheSwitchSetToAxonIdentifiersAreAxonsRandomUuids() {
        TimeBasedIdentifierFactory factory = new TimeBasedIdentifierFactory("axon", System::currentTimeMillis);

        assertThat(UUID.fromString(factory.generateIdentifier()).version()).isEqualTo(4);
    }

    @Test
    void withTheSwitchSetToTimeBasedOrUnsetIdentifiersAreVersion7() {
        for (String setting : new String[]{"time-based", null, " "}) {
            TimeBasedIdentifierFactory factory = new TimeBasedIdentifierFactory(setting, System::currentTimeMillis);
            assertThat(UUID.fromString(factory.generateIdentifier()).version()).as("setting [%s]", setting)
                                                                               .isEqualTo(7);
        }
    }

    @Test
    void anUnknownValueOfTheSwitchIsRefusedNamingTheSetting() {
        assertThatThrownBy(() -> new TimeBasedIdentifierFactory("random", System::currentTimeMillis))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("ringbus.identifiers")
                .hasMessageContaining("[random]");
    }

    @Test
    void ringbusTurnedOffWhereTheFactoryCanSeeItGivesBackAxonsIdentifiers() {
        String choice = TimeBasedIdentifierFactory.choice(null, "false");
        TimeBasedIdentifierFactory factory = new TimeBasedIdentifierFactory(choice, System::currentTimeMillis);

        assertThat(UUID.fromString(factory.generateIdentifier()).version()).isEqualTo(4);
    }

    @Test
    void theIdentifierSwitchWinsOverRingbusEnabled() {
        assertThat(TimeBasedIdentifierFactory.choice("time-based", "false")).isEqualTo("time-based");
        assertThat(TimeBasedIdentifierFactory.choice(null, "true")).isNull();
        assertThat(TimeBasedIdentifierFactory.choice(null, null)).isNull();
    }
}
