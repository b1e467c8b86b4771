package io.github.ringbus.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.github.ringbus.RingCommandBus;
import io.github.ringbus.RingEventStore;
import io.github.ringbus.jdbc.JdbcTransactionManager;
import jakarta.transaction.Transactional;
import org.axonframework.commandhandling.AnnotationCommandHandlerAdapter;
import org.axonframework.commandhandling.CommandBus;
import org.axonframework.commandhandling.CommandHandler;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.commandhandling.SimpleCommandBus;
import org.axonframework.common.transaction.Transaction;
import org.axonframework.eventsourcing.EventSourcingHandler;
import org.axonframework.eventsourcing.EventSourcingRepository;
import org.axonframework.eventsourcing.eventstore.EmbeddedEventStore;
import org.axonframework.eventsourcing.eventstore.EventStore;
import org.axonframework.messaging.interceptors.ExceptionHandler;
import org.axonframework.modelling.command.AggregateAnnotationCommandHandler;
import org.axonframework.modelling.command.AggregateIdentifier;
import org.axonframework.modelling.command.Repository;
import org.axonframework.modelling.command.TargetAggregateIdentifier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.axonframework.commandhandling.GenericCommandMessage.asCommandMessage;
import static org.axonframework.modelling.command.AggregateLifecycle.apply;

/**
 * An external command handler that declares a transaction ({@code @Transactional}) runs in the command's transaction,
 * as on {@code SimpleCommandBus} with a transaction manager: what it writes commits and rolls back with the command's
 * events, and when its own transactional work failed (marking the transaction rollback-only) the command fails at its
 * commit with nothing of it stored, even when an {@code @ExceptionHandler} answered it. Modelled on a shop whose
 * cart-publishing handler is a Spring {@code @Transactional} component with an exception handler that records the
 * failed publication; on real PostgreSQL (Axon's JDBC engine, one transaction manager per bus), ringbus beside
 * {@code SimpleCommandBus}. The handler opens its transaction as Spring's transaction interceptor does
 * (propagation {@code REQUIRED}: it joins one active on the thread, and its rollback then marks that one
 * rollback-only); Spring's own is in {@code examples/jpa-event-store}.
 */
class TransactionalHandlerTest extends OnPostgres {

    private final List<AutoCloseable> closing = new ArrayList<>();
    private Twin ring;
    private Twin simple;

    @BeforeEach
    void startBothBuses() throws SQLException {
        try (Connection connection = server.connect(); Statement statement = connection.createStatement()) {
            statement.execute("create table if not exists published_cart (id varchar(64) primary key)");
        }
        // Identifiers of their own per test: the event store keeps every test's aggregates.
        String test = Long.toString(System.nanoTime(), 36);
        ring = Twin.ring(newPool(), "r-" + test + "-");
        simple = Twin.simple(newPool(), "s-" + test + "-");
    }

    @AfterEach
    void stopBothBuses() throws Exception {
        if (ring != null) {
            ring.close();
        }
        if (simple != null) {
            simple.close();
        }
        for (AutoCloseable closeable : closing) {
            closeable.close();
        }
    }

    private HikariDataSource newPool() {
        HikariDataSource pool = server.pool(4);
        closing.add(pool);
        // No outage here: a busy machine may take more than the fixture's second to open a connection.
        pool.setConnectionTimeout(30_000);
        return pool;
    }

    @Test
    void aCommandWhoseTransactionalHandlerFailedFailsAtItsCommitWithNothingStoredThoughItsExceptionHandlerAnswered() {
        for (Twin twin : List.of(ring, simple)) {
            twin.await(new CreateCart(twin.id("c")));
        }

        List<CommandResultMessage<Object>> published = new ArrayList<>();
        for (Twin twin : List.of(ring, simple)) {
            published.add(twin.await(new Publish(twin.id("c"))));
        }

        assertThat(published.get(1).isExceptional()).as("SimpleCommandBus's outcome").isTrue();
        assertThat(published.get(0).isExceptional()).as("ringbus's outcome").isTrue();
        assertThat(published.get(0).exceptionResult()).isInstanceOf(published.get(1).exceptionResult().getClass());
        assertThat(ring.stored("c")).isEqualTo(simple.stored("c")).containsExactly("Created");
        assertThat(ring.publishedRows()).isEqualTo(simple.publishedRows()).isZero();
    }

    @Test
    void whatATransactionalHandlerWritesCommitsWithTheCommandsEvents() {
        for (Twin twin : List.of(ring, simple)) {
            twin.await(new CreateCart(twin.id("c")));
            twin.await(new Submit(twin.id("c")));
        }

        List<CommandResultMessage<Object>> published = new ArrayList<>();
        for (Twin twin : List.of(ring, simple)) {
            published.add(twin.await(new Publish(twin.id("c"))));
        }

        assertThat(published).noneMatch(CommandResultMessage::isExceptional);
        assertThat(ring.stored("c")).isEqualTo(simple.stored("c")).containsExactly("Created", "Submitted", "Published");
        assertThat(ring.publishedRows()).isEqualTo(simple.publishedRows()).isOne();
    }

    @Test
    void aTransactionalHandlersWriteRollsBackWithTheCommandWhenTheAggregateRefusesAfterIt() {
        for (Twin twin : List.of(ring, simple)) {
            twin.await(new CreateCart(twin.id("c")));
            twin.await(new Submit(twin.id("c")));
            twin.await(new Publish(twin.id("c")));
        }

        List<CommandResultMessage<Object>> again = new ArrayList<>();
        for (Twin twin : List.of(ring, simple)) {
            again.add(twin.await(new Republish(twin.id("c"))));
        }

        assertThat(again).allMatch(CommandResultMessage::isExceptional);
        assertThat(ring.stored("c")).isEqualTo(simple.stored("c")).containsExactly("Created", "Submitted", "Published");
        assertThat(ring.publishedRows()).isEqualTo(simple.publishedRows()).isOne();
    }

    @Test
    void aTransactionalHandlersCommandSeesTheCommandsSentBeforeItAndTheCommandsAfterItSeeIt() {
        List<List<CommandResultMessage<Object>>> outcomes = new ArrayList<>();
        for (Twin twin : List.of(ring, simple)) {
            // Sent without waiting: the publication needs the submission, which may still be on its way to the store.
            List<CompletableFuture<CommandResultMessage<Object>>> sent = new ArrayList<>();
            for (int i = 0; i < 20; i++) {
                String id = twin.id("c" + i);
                sent.add(twin.send(new CreateCart(id)));
                sent.add(twin.send(new Submit(id)));
                sent.add(twin.send(new Publish(id)));
                sent.add(twin.send(new Publish(id)));
                sent.add(twin.send(new Count(id)));
            }
            outcomes.add(sent.stream().map(CompletableFuture::join).toList());
        }

        for (int i = 0; i < outcomes.get(1).size(); i++) {
            CommandResultMessage<Object> expected = outcomes.get(1).get(i);
            CommandResultMessage<Object> actual = outcomes.get(0).get(i);
            assertThat(actual.isExceptional()).as("command %s failed: %s, on SimpleCommandBus: %s", i,
                                                  actual.optionalExceptionResult().orElse(null),
                                                  expected.optionalExceptionResult().orElse(null))
                                              .isEqualTo(expected.isExceptional());
            if (!expected.isExceptional() && !(expected.getPayload() instanceof String)) { // identifiers differ
                assertThat(actual.getPayload()).as("command %s's result", i).isEqualTo(expected.getPayload());
            }
        }
        assertThat(outcomes.get(1).get(3).exceptionResult()).as("the second publication fails at its commit")
                                                           .hasMessageContaining("rollback-only");
        assertThat(outcomes.get(1).get(4).getPayload()).isEqualTo(3);
        for (int i = 0; i < 20; i++) {
            assertThat(ring.stored("c" + i)).isEqualTo(simple.stored("c" + i))
                                            .containsExactly("Created", "Submitted", "Published");
        }
        assertThat(ring.publishedRows()).isEqualTo(simple.publishedRows()).isEqualTo(20);
    }

    @Test
    void afterATransactionalHandlersCommandTheRingReadsAgainOnlyTheAggregateItLoaded() {
        String published = ring.id("published");
        String other = ring.id("other");
        ring.await(new CreateCart(published));
        ring.await(new Submit(published));
        ring.await(new CreateCart(other));
        ring.await(new Count(other)); // both in the ring's cache now
        int readsBefore = ring.engine.aggregateReads();

        assertThat(ring.await(new Publish(published)).isExceptional()).isFalse();
        int readByThePublisher = ring.engine.aggregateReads() - readsBefore;
        assertThat(ring.await(new Count(other)).getPayload()).isEqualTo(1);
        assertThat(ring.engine.aggregateReads() - readsBefore).as("reads after the other cart's command")
                                                              .isEqualTo(readByThePublisher);
        assertThat(ring.await(new Count(published)).getPayload()).isEqualTo(3);
        assertThat(ring.engine.aggregateReads() - readsBefore).as("reads after the published cart's command")
                                                              .isEqualTo(readByThePublisher + 1);
    }

    @Test
    void aCommandATransactionalHandlerSendsAndWaitsForRunsInItsTransactionAndRollsBackWithIt() {
        List<CommandResultMessage<Object>> outcomes = new ArrayList<>();
        for (Twin twin : List.of(ring, simple)) {
            twin.await(new CreateCart(twin.id("ok")));
            outcomes.add(twin.await(new SubmitAndPublish(twin.id("ok"), false)));
            twin.await(new CreateCart(twin.id("refused")));
            outcomes.add(twin.await(new SubmitAndPublish(twin.id("refused"), true)));
        }

        assertThat(outcomes.get(0).isExceptional()).isEqualTo(outcomes.get(2).isExceptional()).isFalse();
        assertThat(outcomes.get(1).isExceptional()).isEqualTo(outcomes.get(3).isExceptional()).isTrue();
        assertThat(outcomes.get(1).exceptionResult()).isInstanceOf(outcomes.get(3).exceptionResult().getClass());
        assertThat(ring.stored("ok")).isEqualTo(simple.stored("ok"))
                                     .containsExactly("Created", "Submitted", "Published");
        assertThat(ring.stored("refused")).isEqualTo(simple.stored("refused")).containsExactly("Created");
        assertThat(ring.publishedRows()).isEqualTo(simple.publishedRows()).isOne();
    }

    /**
     * Under load from several senders at once, on {@code FULL} with two handler and two store threads, with some
     * submissions refused by the database session (so that the commands built on them, a touch, are handled again, which the
     * store threads ask of the handler threads while a transactional command may be waiting there for the earlier
     * commands): every command is answered, every stream is gapless, and a cart has its publication row exactly when
     * it has a {@code Published} event.
     */
    @Test
    void underConcurrentSendersAndRefusedAppendsEveryCommandIsAnsweredAndEachRowIsStoredWithItsEvent()
            throws Exception {
        ring.close();
        String prefix = ring.id("load-");
        ring = Twin.ring(newPool(), prefix, (connection, events) -> {
            for (org.axonframework.eventhandling.EventMessage<?> event : events) {
                if (event.getPayload() instanceof Submitted submitted && submitted.id().hashCode() % 5 == 0) {
                    throw new SQLException("refused by the session", "23514");
                }
            }
        }, b -> b.topology(io.github.ringbus.Topology.FULL).handlerThreads(2).storeThreads(2));
        int carts = 40;
        java.util.concurrent.ExecutorService senders = java.util.concurrent.Executors.newFixedThreadPool(4);
        List<java.util.concurrent.Future<List<CommandResultMessage<Object>>>> sent = new ArrayList<>();
        for (int sender = 0; sender < 4; sender++) {
            int first = sender;
            sent.add(senders.submit(() -> {
                List<CompletableFuture<CommandResultMessage<Object>>> mine = new ArrayList<>();
                for (int i = first; i < carts; i += 4) {
                    String id = ring.id("c" + i);
                    mine.add(ring.send(new CreateCart(id)));
                    mine.add(ring.send(new Submit(id)));
                    mine.add(ring.send(new Touch(id)));
                    mine.add(ring.send(new Publish(id)));
                    mine.add(ring.send(new Count(id)));
                    mine.add(ring.send(new Publish(id)));
                }
                return mine.stream().map(CompletableFuture::join).toList();
            }));
        }
        int answered = 0;
        for (java.util.concurrent.Future<List<CommandResultMessage<Object>>> one : sent) {
            answered += one.get(60, TimeUnit.SECONDS).size();
        }
        senders.shutdown();

        assertThat(answered).isEqualTo(carts * 6);
        for (int i = 0; i < carts; i++) {
            String id = ring.id("c" + i);
            List<Long> sequenceNumbers = ring.eventStore.readEvents(id).asStream()
                                                        .map(org.axonframework.eventhandling.DomainEventMessage::getSequenceNumber)
                                                        .toList();
            assertThat(sequenceNumbers).as("cart %s's stream", i)
                                       .isEqualTo(java.util.stream.LongStream.range(0, sequenceNumbers.size())
                                                                             .boxed().toList());
            List<String> stored = ring.stored("c" + i);
            boolean refused = id.hashCode() % 5 == 0;
            assertThat(stored).as("cart %s", i).isEqualTo(refused ? List.of("Created", "Touched")
                                                                   : List.of("Created", "Submitted", "Touched",
                                                                             "Published"));
            assertThat(ring.rowsOf(id)).as("cart %s's row", i).isEqualTo(refused ? 0 : 1);
        }
    }

    /** One bus with the cart and its publisher on the server's database, its identifiers prefixed. */
    private static final class Twin implements AutoCloseable {

        private final String prefix;
        private final PostgresServer.ReadCountingEngine engine;
        private final CommandBus bus;
        private final EventStore eventStore;
        private final HikariDataSource pool;
        private final Runnable shutdown;

        private Twin(String prefix, PostgresServer.ReadCountingEngine engine, CommandBus bus, EventStore eventStore,
                     HikariDataSource pool, Runnable shutdown) {
            this.prefix = prefix;
            this.engine = engine;
            this.bus = bus;
            this.eventStore = eventStore;
            this.pool = pool;
            this.shutdown = shutdown;
        }

        static Twin ring(HikariDataSource pool, String prefix) {
            return ring(pool, prefix, null, b -> b);
        }

        static Twin ring(HikariDataSource pool, String prefix, PostgresServer.AppendHook hook,
                         java.util.function.UnaryOperator<RingCommandBus.Builder> settings) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            PostgresServer.ReadCountingEngine engine = PostgresServer.engine(transactions, hook);
            RingEventStore eventStore = RingEventStore.builder().storageEngine(engine).build();
            RingCommandBus bus = settings.apply(RingCommandBus.builder()
                                                              .eventStore(eventStore)
                                                              .transactionManager(transactions))
                                         .build();
            Repository<Cart> carts = bus.registerAggregate(Cart.class);
            new AnnotationCommandHandlerAdapter<>(new Publisher(() -> carts, transactions, bus)).subscribe(bus);
            bus.start();
            return new Twin(prefix, engine, bus, eventStore, pool, () -> {
                bus.shutdown();
                eventStore.shutDown();
            });
        }

        static Twin simple(HikariDataSource pool, String prefix) {
            JdbcTransactionManager transactions = new JdbcTransactionManager(pool);
            PostgresServer.ReadCountingEngine engine = PostgresServer.engine(transactions);
            EmbeddedEventStore eventStore = EmbeddedEventStore.builder().storageEngine(engine).build();
            SimpleCommandBus bus = SimpleCommandBus.builder().transactionManager(transactions).build();
            EventSourcingRepository<Cart> carts = EventSourcingRepository.builder(Cart.class)
                                                                         .eventStore(eventStore)
                                                                         .build();
            AggregateAnnotationCommandHandler.<Cart>builder().aggregateType(Cart.class).repository(carts).build()
                                             .subscribe(bus);
            new AnnotationCommandHandlerAdapter<>(new Publisher(() -> carts, transactions, bus)).subscribe(bus);
            return new Twin(prefix, engine, bus, eventStore, pool, eventStore::shutDown);
        }

        String id(String name) {
            return prefix + name;
        }

        @SuppressWarnings("unchecked")
        CompletableFuture<CommandResultMessage<Object>> send(Object command) {
            CompletableFuture<CommandResultMessage<Object>> result = new CompletableFuture<>();
            bus.dispatch(asCommandMessage(command),
                         (message, outcome) -> result.complete((CommandResultMessage<Object>) outcome));
            return result.orTimeout(30, TimeUnit.SECONDS);
        }

        CommandResultMessage<Object> await(Object command) {
            return send(command).join();
        }

        /** The payload types of the aggregate's stored events, by simple name, in sequence order. */
        List<String> stored(String name) {
            return eventStore.readEvents(id(name)).asStream()
                             .map(event -> event.getPayloadType().getSimpleName()).toList();
        }

        /** The publication rows of one cart. */
        int rowsOf(String id) {
            try (Connection connection = pool.getConnection();
                 PreparedStatement query = connection.prepareStatement(
                         "select count(*) from published_cart where id = ?")) {
                query.setString(1, id);
                try (ResultSet rows = query.executeQuery()) {
                    rows.next();
                    return rows.getInt(1);
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }

        /** The rows the publisher wrote for this bus's carts. */
        int publishedRows() {
            try (Connection connection = pool.getConnection();
                 PreparedStatement query = connection.prepareStatement(
                         "select count(*) from published_cart where id like ?")) {
                query.setString(1, prefix + "%");
                try (ResultSet rows = query.executeQuery()) {
                    rows.next();
                    return rows.getInt(1);
                }
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }

        @Override
        public void close() {
            shutdown.run();
            try (Connection connection = pool.getConnection(); PreparedStatement delete = connection.prepareStatement(
                    "delete from published_cart where id like ?")) {
                delete.setString(1, prefix + "%");
                delete.executeUpdate();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    record CreateCart(@TargetAggregateIdentifier String id) {
    }

    record Submit(@TargetAggregateIdentifier String id) {
    }

    record Publish(@TargetAggregateIdentifier String id) {
    }

    /** Writes a publication row in a transactional part of its own, then publishes again: the cart refuses. */
    record Republish(@TargetAggregateIdentifier String id) {
    }

    record Count(@TargetAggregateIdentifier String id) {
    }

    /** Applies an event of no consequence. */
    record Touch(@TargetAggregateIdentifier String id) {
    }

    record Touched(String id) {
    }

    /** Submits the cart by a command it sends and waits for, then publishes it, then fails if told to. */
    record SubmitAndPublish(@TargetAggregateIdentifier String id, boolean failAtTheEnd) {
    }

    record Created(String id) {
    }

    record Submitted(String id) {
    }

    record Published(String id) {
    }

    record PublicationFailed(String id) {
    }

    /**
     * The external handler: a transactional component (jakarta's {@code @Transactional} on its class) that records a
     * publication in a table of its own and publishes the cart, and whose exception handler records a failed
     * publication on the cart and answers the command.
     */
    @Transactional
    static class Publisher {

        private final Supplier<Repository<Cart>> carts;
        private final JdbcTransactionManager transactions;
        private final CommandBus bus;

        Publisher(Supplier<Repository<Cart>> carts, JdbcTransactionManager transactions, CommandBus bus) {
            this.carts = carts;
            this.transactions = transactions;
            this.bus = bus;
        }

        @CommandHandler
        void handle(SubmitAndPublish command) throws Exception {
            org.axonframework.commandhandling.callbacks.FutureCallback<Object, Object> submitted =
                    new org.axonframework.commandhandling.callbacks.FutureCallback<>();
            bus.dispatch(asCommandMessage(new Submit(command.id())), submitted);
            assertThat(submitted.get(10, TimeUnit.SECONDS).isExceptional()).isFalse();
            inTransaction(() -> {
                record(command.id());
                carts.get().load(command.id()).execute(Cart::publish);
            });
            if (command.failAtTheEnd()) {
                throw new IllegalArgumentException("failed after its submission and publication");
            }
        }

        @CommandHandler
        void handle(Publish command) {
            inTransaction(() -> {
                record(command.id());
                carts.get().load(command.id()).execute(Cart::publish);
            });
        }

        /** Its write committed by its own transactional part, as a call of a {@code @Transactional} repository's. */
        @CommandHandler
        void handle(Republish command) {
            inTransaction(() -> record(command.id() + "-again"));
            carts.get().load(command.id()).execute(Cart::publish);
        }

        @ExceptionHandler(resultType = IllegalStateException.class)
        void onFailure(Publish command) {
            carts.get().load(command.id()).execute(Cart::failPublication);
        }

        /** What Spring's transaction interceptor does around a {@code REQUIRED} method. */
        private void inTransaction(Runnable body) {
            Transaction transaction = transactions.startTransaction();
            try {
                body.run();
            } catch (RuntimeException | Error failure) {
                transaction.rollback();
                throw failure;
            }
            transaction.commit();
        }

        private void record(String id) {
            try (Connection connection = transactions.connectionProvider().getConnection();
                 PreparedStatement insert = connection.prepareStatement(
                         "insert into published_cart (id) values (?) on conflict do nothing")) {
                insert.setString(1, id);
                insert.executeUpdate();
            } catch (SQLException e) {
                throw new IllegalStateException(e);
            }
        }
    }

    static class Cart {

        @AggregateIdentifier
        private String id;
        private boolean submitted;
        private boolean published;
        private int events;

        Cart() {
        }

        @CommandHandler
        Cart(CreateCart command) {
            apply(new Created(command.id()));
        }

        @CommandHandler
        void handle(Submit command) {
            apply(new Submitted(id));
        }

        @CommandHandler
        int handle(Count command) {
            return events;
        }

        @CommandHandler
        void handle(Touch command) {
            apply(new Touched(id));
        }

        @EventSourcingHandler
        void on(Touched event) {
            events++;
        }

        void publish() {
            if (!submitted) {
                throw new IllegalStateException("cannot publish a cart never submitted");
            }
            if (published) {
                throw new IllegalStateException("cannot publish a cart twice");
            }
            apply(new Published(id));
        }

        void failPublication() {
            apply(new PublicationFailed(id));
        }

        @EventSourcingHandler
        void on(Created event) {
            id = event.id();
            events++;
        }

        @EventSourcingHandler
        void on(Submitted event) {
            submitted = true;
            events++;
        }

        @EventSourcingHandler
        void on(Published event) {
            published = true;
            events++;
        }

        @EventSourcingHandler
        void on(PublicationFailed event) {
            events++;
        }
    }
}
