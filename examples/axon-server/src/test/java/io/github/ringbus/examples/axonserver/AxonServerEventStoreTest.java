package io.github.ringbus.examples.axonserver;

import com.google.protobuf.ByteString;
import io.axoniq.axonserver.grpc.SerializedObject;
import io.axoniq.axonserver.grpc.event.Event;
import io.github.ringbus.CommitOutcomeUnknownException;
import io.github.ringbus.examples.axonserver.AccountMessages.Deposit;
import io.github.ringbus.examples.axonserver.AccountMessages.Deposited;
import io.github.ringbus.examples.axonserver.AccountMessages.OpenAccount;
import io.github.ringbus.examples.axonserver.AccountMessages.Withdraw;
import org.axonframework.serialization.SerializedType;
import org.axonframework.serialization.Serializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.LongPredicate;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * ringbus's store stage on Axon's real {@code AxonServerEventStore}, against {@link AxonServerStandIn}: each batch is
 * one Axon Server append transaction that commits after the subscribers, and each failure Axon Server reports gives
 * every command the outcome {@code SimpleCommandBus} gives it over the same stand-in (its twin, run on a stand-in of
 * its own), except where group commit must differ (a lost connection fails the batch in flight, and says its outcome
 * is unknown).
 */
class AxonServerEventStoreTest {

    private static final LongPredicate NOTHING_REFUSED = amount -> false;

    private final List<AutoCloseable> toClose = new ArrayList<>();

    @AfterEach
    void close() throws Exception {
        for (int i = toClose.size() - 1; i >= 0; i--) {
            toClose.get(i).close();
        }
    }

    private AxonServerStandIn server() {
        AxonServerStandIn server = AxonServerStandIn.start();
        toClose.add(server);
        return server;
    }

    private Node ring(AxonServerStandIn server, LongPredicate auditorRefuses) {
        Node node = Node.ring(server, auditorRefuses);
        toClose.add(node);
        return node;
    }

    private Node simple(AxonServerStandIn server, LongPredicate auditorRefuses) {
        Node node = Node.simple(server, auditorRefuses);
        toClose.add(node);
        return node;
    }

    /** Deposits on accounts {@code prefix + 0 .. accounts - 1}, round robin. */
    private static List<Object> deposits(String prefix, int accounts, int deposits, long amount) {
        List<Object> commands = new ArrayList<>();
        for (int i = 0; i < deposits; i++) {
            commands.add(new Deposit(prefix + (i % accounts), amount));
        }
        return commands;
    }

    private static void openTen(Node node, String prefix) {
        for (int i = 0; i < 10; i++) {
            node.gateway().sendAndWait(new OpenAccount(prefix + i));
        }
    }

    @Test
    void aBatchOfCommandsIsOneAxonServerTransaction() {
        AxonServerStandIn server = server();
        Node node = ring(server, NOTHING_REFUSED);
        openTen(node, "group-");
        int before = server.committedTransactions();

        List<String> outcomes = Script.sendAllAtOnce(node, deposits("group-", 10, 2_000, 1));

        assertThat(outcomes).allMatch(outcome -> outcome.startsWith("ok "));
        int transactions = server.committedTransactions() - before;
        // A smoke test of batching, not a speed: 2,000 commands sent at once meet in batches of many.
        assertThat(transactions).as("transactions for 2,000 commands").isBetween(1, 1_000);
        for (int i = 0; i < 10; i++) {
            List<Event> stream = server.eventsOf("group-" + i);
            assertThat(stream).hasSize(201);
            for (int seq = 0; seq < stream.size(); seq++) {
                assertThat(stream.get(seq).getAggregateSequenceNumber()).isEqualTo(seq);
            }
        }
        assertThat(server.refusedTransactions()).isZero();
        System.out.printf("2,000 deposits on ringbus: %d Axon Server transactions (%.1f commands each)%n",
                          transactions, 2_000.0 / transactions);
    }

    @Test
    void aSimpleCommandBusTwinCommitsOneTransactionPerCommand() {
        AxonServerStandIn server = server();
        Node node = simple(server, NOTHING_REFUSED);
        openTen(node, "twin-");
        int before = server.committedTransactions();

        List<String> outcomes = Script.sendAllAtOnce(node, deposits("twin-", 10, 200, 1));

        assertThat(outcomes).allMatch(outcome -> outcome.startsWith("ok "));
        assertThat(server.committedTransactions() - before).isEqualTo(200);
    }

    /**
     * A subscriber (a subscribing processor, in the store's transaction) refuses one command in the middle of a batch:
     * that command fails with the subscriber's exception and nothing of it is stored; the rest of the batch is stored
     * once, and the commands after it on its account answer on the account without it, as on SimpleCommandBus.
     */
    @Test
    void aThrowingSubscriberFailsOnlyItsCommandAsOnSimpleCommandBus() {
        LongPredicate refuses13 = amount -> amount == 13;
        List<Object> script = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            script.add(new Deposit("sub-" + (i % 3), i == 31 ? 13 : 1));
        }
        script.add(new Withdraw("sub-1", 25));

        AxonServerStandIn ringServer = server();
        Node ringNode = ring(ringServer, refuses13);
        openAccounts(ringNode, "sub-", 3);
        List<String> onRing = Script.sendAllAtOnce(ringNode, script);

        AxonServerStandIn twinServer = server();
        Node twinNode = simple(twinServer, refuses13);
        openAccounts(twinNode, "sub-", 3);
        List<String> onTwin = Script.sendAllAtOnce(twinNode, script);

        assertThat(onTwin.get(31)).startsWith("failed ");
        assertThat(onRing).isEqualTo(onTwin);
        for (int account = 0; account < 3; account++) {
            assertThat(Script.stored(ringServer, "sub-" + account))
                    .isEqualTo(Script.stored(twinServer, "sub-" + account));
        }
        assertThat(ringServer.eventsOf("sub-1")).noneMatch(e -> e.getPayload().getData().toStringUtf8()
                                                                  .contains("<amount>13</amount>"));
    }

    /**
     * Axon Server refuses a transaction holding one command's event (a payload too large, {@code AXONIQ-2001}): on a
     * ring, where that command shares its transaction with others, only it fails, as on SimpleCommandBus.
     */
    @Test
    void aRefusedEventFailsOnlyItsCommandAsOnSimpleCommandBus() {
        List<Object> script = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            script.add(new Deposit("big-" + (i % 3), i == 20 || i == 44 ? 7 : 1));
        }

        AxonServerStandIn ringServer = server();
        Node ringNode = ring(ringServer, NOTHING_REFUSED);
        openAccounts(ringNode, "big-", 3);
        ringServer.refuseAppendsWhen(e -> e.getPayload().getData().toStringUtf8().contains("<amount>7</amount>"),
                                     "AXONIQ-2001");
        List<String> onRing = Script.sendAllAtOnce(ringNode, script);

        AxonServerStandIn twinServer = server();
        Node twinNode = simple(twinServer, NOTHING_REFUSED);
        openAccounts(twinNode, "big-", 3);
        twinServer.refuseAppendsWhen(e -> e.getPayload().getData().toStringUtf8().contains("<amount>7</amount>"),
                                     "AXONIQ-2001");
        List<String> onTwin = Script.sendAllAtOnce(twinNode, script);

        assertThat(onTwin.get(20)).isEqualTo("failed StatusRuntimeException");
        assertThat(onRing).isEqualTo(onTwin);
        for (int account = 0; account < 3; account++) {
            assertThat(Script.stored(ringServer, "big-" + account))
                    .isEqualTo(Script.stored(twinServer, "big-" + account));
        }
    }

    /**
     * Each failure Axon Server can give an append, one command at a time: every command has the outcome it has on
     * SimpleCommandBus over the same stand-in, and the account goes on from what is stored.
     * <ul>
     *     <li>a refusal ({@code AXONIQ-2001}): that command fails, nothing of it stored;</li>
     *     <li>the connection lost mid-append: that command fails, nothing of it stored;</li>
     *     <li>a commit never answered (stored by the server, the answer lost): that command fails; its event is
     *     stored once, never appended again, and the next command sees it.</li>
     * </ul>
     */
    @Test
    void eachInjectedFailureGivesTheOutcomeOfSimpleCommandBus() {
        AxonServerStandIn ringServer = server();
        Node ringNode = ring(ringServer, NOTHING_REFUSED);
        List<String> onRing = runFaults(ringServer, ringNode);

        AxonServerStandIn twinServer = server();
        Node twinNode = simple(twinServer, NOTHING_REFUSED);
        List<String> onTwin = runFaults(twinServer, twinNode);

        assertThat(onTwin).containsExactly(
                "ok faults", "ok 1",
                "failed StatusRuntimeException", "ok 2",
                "failed StatusRuntimeException", "ok 3",
                "failed TimeoutException", "ok 104");
        assertThat(onRing).isEqualTo(onTwin);
        assertThat(Script.stored(ringServer, "faults")).isEqualTo(Script.stored(twinServer, "faults"))
                                                          .hasSize(6);
    }

    private static List<String> runFaults(AxonServerStandIn server, Node node) {
        List<String> outcomes = new ArrayList<>();
        outcomes.addAll(Script.sendOneByOne(node, List.of(new OpenAccount("faults"), new Deposit("faults", 1))));
        server.refuseAppendsWhen(e -> e.getPayload().getData().toStringUtf8().contains("<amount>50</amount>"),
                                 "AXONIQ-2001");
        outcomes.addAll(Script.sendOneByOne(node, List.of(new Deposit("faults", 50), new Deposit("faults", 1))));
        server.refuseAppendsWhen(null, null);
        server.failNextAppendAsUnreachable();
        outcomes.addAll(Script.sendOneByOne(node, List.of(new Deposit("faults", 60), new Deposit("faults", 1))));
        server.neverAnswerNextCommit();
        outcomes.addAll(Script.sendOneByOne(node, List.of(new Deposit("faults", 100), new Deposit("faults", 1))));
        return outcomes;
    }

    /**
     * Group commit's one difference: a connection lost while a batch's transaction streams fails every command of
     * that transaction (SimpleCommandBus fails the one command it was appending), stores nothing of them, and later
     * commands are stored as usual.
     */
    @Test
    void aLostConnectionFailsTheBatchInFlightWholeAndNothingOfItIsStored() throws Exception {
        AxonServerStandIn server = server();
        Node node = ring(server, NOTHING_REFUSED);
        openAccounts(node, "lost-", 3);
        server.failNextAppendAsUnreachable();

        List<String> outcomes = Script.sendAllAtOnce(node, deposits("lost-", 3, 30, 1));
        long failed = outcomes.stream().filter(o -> o.startsWith("failed ")).count();
        long succeeded = outcomes.size() - failed;
        assertThat(failed).isPositive();
        long stored = 0;
        for (int account = 0; account < 3; account++) {
            stored += server.eventsOf("lost-" + account).size() - 1;
        }
        assertThat(stored).as("every deposit that succeeded is stored once, no other").isEqualTo(succeeded);

        // The next commands go on from what is stored.
        Object after = node.gateway().send(new Deposit("lost-0", 1)).get(30, TimeUnit.SECONDS);
        assertThat(after).isEqualTo((long) server.eventsOf("lost-0").size() - 1);
    }

    @Test
    void aCommitWithoutAnswerFailsWithAnUnknownOutcomeAndIsNeverAppendedAgain() throws Exception {
        AxonServerStandIn server = server();
        Node node = ring(server, NOTHING_REFUSED);
        node.gateway().sendAndWait(new OpenAccount("unanswered"));
        server.neverAnswerNextCommit();

        CompletableFuture<Object> unanswered = node.gateway().send(new Deposit("unanswered", 5));
        Throwable failure = catchThrowable(() -> unanswered.get(30, TimeUnit.SECONDS));

        assertThat(failure).isInstanceOf(ExecutionException.class)
                           .hasCauseInstanceOf(CommitOutcomeUnknownException.class);
        assertThat(node.gateway().send(new Deposit("unanswered", 1)).get(30, TimeUnit.SECONDS)).isEqualTo(6L);
        assertThat(server.eventsOf("unanswered")).hasSize(3);
        assertThat(server.refusedTransactions()).isZero();
    }

    /**
     * A handover: another node appended to an account this node has cached (Axon Server routed its commands there for
     * a while). The next command here meets the server's sequence check, is handled again on the account as stored
     * and succeeds: no command fails for the handover.
     */
    @Test
    void anAppendByAnotherWriterCostsNoFailedCommand() throws Exception {
        AxonServerStandIn server = server();
        Node node = ring(server, NOTHING_REFUSED);
        node.gateway().sendAndWait(new OpenAccount("handover"));
        assertThat(node.gateway().<Long>sendAndWait(new Deposit("handover", 10))).isEqualTo(10L);

        server.appendAsAnotherWriter(List.of(deposited(node.axon.eventSerializer(), "handover", 2, 5)));

        Object balance = node.gateway().send(new Deposit("handover", 1)).get(30, TimeUnit.SECONDS);
        assertThat(balance).as("handled on the stored account, the other node's deposit included").isEqualTo(16L);
        assertThat(server.eventsOf("handover")).extracting(Event::getAggregateSequenceNumber)
                                               .containsExactly(0L, 1L, 2L, 3L);
        assertThat(server.refusedTransactions()).isEqualTo(1);
        assertThat(node.gateway().send(new Deposit("handover", 1)).get(30, TimeUnit.SECONDS)).isEqualTo(17L);
    }

    private static Event deposited(Serializer serializer, String account, long sequence, long amount) {
        org.axonframework.serialization.SerializedObject<byte[]> payload =
                serializer.serialize(new Deposited(account, amount), byte[].class);
        SerializedType type = payload.getType();
        return Event.newBuilder()
                    .setMessageIdentifier(UUID.randomUUID().toString())
                    .setAggregateIdentifier(account)
                    .setAggregateSequenceNumber(sequence)
                    .setAggregateType("Account")
                    .setTimestamp(System.currentTimeMillis())
                    .setPayload(SerializedObject.newBuilder()
                                                .setType(type.getName())
                                                .setRevision(type.getRevision() == null ? "" : type.getRevision())
                                                .setData(ByteString.copyFrom(payload.getData())))
                    .build();
    }

    private static void openAccounts(Node node, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            node.gateway().sendAndWait(new OpenAccount(prefix + i));
        }
    }
}
