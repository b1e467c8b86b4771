package io.github.ringbus.examples.axonserver;

import io.axoniq.axonserver.grpc.ErrorMessage;
import io.axoniq.axonserver.grpc.InstructionAck;
import io.axoniq.axonserver.grpc.command.Command;
import io.axoniq.axonserver.grpc.command.CommandProviderInbound;
import io.axoniq.axonserver.grpc.command.CommandProviderOutbound;
import io.axoniq.axonserver.grpc.command.CommandResponse;
import io.axoniq.axonserver.grpc.command.CommandServiceGrpc;
import io.axoniq.axonserver.grpc.control.ClientIdentification;
import io.axoniq.axonserver.grpc.control.NodeInfo;
import io.axoniq.axonserver.grpc.control.PlatformInboundInstruction;
import io.axoniq.axonserver.grpc.control.PlatformInfo;
import io.axoniq.axonserver.grpc.control.PlatformOutboundInstruction;
import io.axoniq.axonserver.grpc.control.PlatformServiceGrpc;
import io.axoniq.axonserver.grpc.event.Confirmation;
import io.axoniq.axonserver.grpc.event.Event;
import io.axoniq.axonserver.grpc.event.EventStoreGrpc;
import io.axoniq.axonserver.grpc.event.EventWithToken;
import io.axoniq.axonserver.grpc.event.GetAggregateEventsRequest;
import io.axoniq.axonserver.grpc.event.GetAggregateSnapshotsRequest;
import io.axoniq.axonserver.grpc.event.GetEventsRequest;
import io.axoniq.axonserver.grpc.event.GetFirstTokenRequest;
import io.axoniq.axonserver.grpc.event.GetLastTokenRequest;
import io.axoniq.axonserver.grpc.event.ReadHighestSequenceNrRequest;
import io.axoniq.axonserver.grpc.event.ReadHighestSequenceNrResponse;
import io.axoniq.axonserver.grpc.event.TrackingToken;
import io.axoniq.axonserver.grpc.query.QueryProviderInbound;
import io.axoniq.axonserver.grpc.query.QueryProviderOutbound;
import io.axoniq.axonserver.grpc.query.QueryServiceGrpc;
import io.grpc.Metadata;
import io.grpc.Server;
import io.grpc.ServerBuilder;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.StreamObserver;

import java.io.IOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A stand-in for Axon Server in tests: an in-process gRPC server on a free local port that speaks the part of Axon
 * Server's public protocol ({@code axon-server-api}, whose generated services ship in Axon's
 * {@code axonserver-connector-java}) that Axon 4's connector uses for an application's commands and events, so that
 * Axon's real {@code AxonServerEventStore} and {@code AxonServerCommandBus} run against it unchanged.
 * <p>
 * <b>What it models.</b> The platform service the connector asks first (it answers: connect here, on this
 * connection) and the instruction stream that follows (acknowledged); the event store's append transaction (a client
 * stream of events, stored only when the client completes it, all or nothing, with Axon Server's sequence rule: an
 * aggregate's first event in a transaction must follow its last stored one, and its events must number on without
 * gaps, else the whole transaction is refused with {@code AXONIQ-2000}); reading an aggregate's events and its highest
 * sequence number; the tokens and the event stream tracking processors read (with the client's permits); command
 * routing (a command dispatched is sent to a client that subscribed to its name, and its answer returned); a query
 * stream that accepts subscriptions and routes nothing.
 * <p>
 * <b>What it does not model</b>: clustering, replication, leaders, contexts other than the default, the server's own
 * storage and its limits (a transaction's size, a message's size), snapshots (appended and forgotten), access
 * control, persistent streams, the event scheduler, queries, load balancing of commands between clients. Failures are
 * injected ({@link #refuseAppendsWhen}, {@link #failNextAppendAsUnreachable}, {@link #neverAnswerNextCommit}) and
 * surface to the client as Axon Server's do: a gRPC status with the {@code AxonIQ-ErrorCode} trailer.
 * <p>
 * Thread-safe: gRPC calls it from its own threads; a test reads what it stored from any thread.
 */
public final class AxonServerStandIn implements AutoCloseable {

    private static final Metadata.Key<String> ERROR_CODE =
            Metadata.Key.of("AxonIQ-ErrorCode", Metadata.ASCII_STRING_MARSHALLER);

    private final Server server;
    /** Guarded by this: every stored event, its index its token. */
    private final List<Event> events = new ArrayList<>();
    /** Guarded by this: each aggregate's stored events. */
    private final Map<String, List<Event>> aggregates = new HashMap<>();
    /** Guarded by this: the transactions stored, refused, rolled back by the client. */
    private int committedTransactions;
    private int refusedTransactions;
    private int rolledBackTransactions;
    /** Guarded by this: the events of each committed transaction, in commit order. */
    private final List<List<Event>> transactions = new ArrayList<>();

    private volatile Refusal refusal;
    private volatile boolean failNextAppend;
    private volatile boolean withholdNextConfirmation;

    private final List<EventStream> eventStreams = new CopyOnWriteArrayList<>();
    private final Map<String, CommandStream> commandHandlers = new ConcurrentHashMap<>();
    private final Map<String, StreamObserver<CommandResponse>> pendingCommands = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicInteger dispatchedCommands = new java.util.concurrent.atomic.AtomicInteger();
    /** Answers withheld ({@link #neverAnswerNextCommit}), kept so that gRPC does not complete them. */
    private final List<StreamObserver<Confirmation>> withheld = new CopyOnWriteArrayList<>();

    private AxonServerStandIn() throws IOException {
        this.server = ServerBuilder.forPort(0)
                                   .addService(new Platform())
                                   .addService(new Events())
                                   .addService(new Commands())
                                   .addService(new Queries())
                                   .build()
                                   .start();
    }

    /** Starts a stand-in on a free port of this machine. */
    public static AxonServerStandIn start() {
        try {
            return new AxonServerStandIn();
        } catch (IOException e) {
            throw new IllegalStateException("Cannot start the Axon Server stand-in", e);
        }
    }

    /** @return where the connector reaches it, for {@code axon.axonserver.servers} */
    public String address() {
        return "localhost:" + server.getPort();
    }

    // ---- what the tests read ----

    /** @return every stored event of the aggregate's stream, in sequence */
    public synchronized List<Event> eventsOf(String aggregateIdentifier) {
        return List.copyOf(aggregates.getOrDefault(aggregateIdentifier, List.of()));
    }

    /** @return every stored event, in token order */
    public synchronized List<Event> allEvents() {
        return List.copyOf(events);
    }

    /** @return the number of append transactions stored */
    public synchronized int committedTransactions() {
        return committedTransactions;
    }

    /** @return the number of append transactions refused (sequence rule or injected refusal) */
    public synchronized int refusedTransactions() {
        return refusedTransactions;
    }

    /** @return the number of append transactions the client rolled back (cancelled) */
    public synchronized int rolledBackTransactions() {
        return rolledBackTransactions;
    }

    /** @return the number of commands routed to a client that subscribed to them */
    public int dispatchedCommands() {
        return dispatchedCommands.get();
    }

    /** @return the events of each stored transaction, in commit order */
    public synchronized List<List<Event>> transactions() {
        return List.copyOf(transactions);
    }

    /**
     * Another writer's append, as another node's after a routing change: stored at once if it follows the aggregate's
     * stored events.
     */
    public void appendAsAnotherWriter(List<Event> append) {
        String refused = commit(append);
        if (refused != null) {
            throw new IllegalStateException(refused);
        }
    }

    // ---- injected failures ----

    /**
     * Refuses every transaction holding an event that matches, with the given Axon Server error code (say
     * {@code AXONIQ-2001}, a payload too large); null to stop.
     */
    public void refuseAppendsWhen(Predicate<Event> matches, String errorCode) {
        this.refusal = matches == null ? null : new Refusal(matches, errorCode);
    }

    /**
     * The next append transaction fails as a lost connection does for the client (gRPC status {@code UNAVAILABLE})
     * once its first event arrives, and nothing of it is stored. The connection itself stays up.
     */
    public void failNextAppendAsUnreachable() {
        this.failNextAppend = true;
    }

    /** The next transaction the client commits is stored, but its confirmation never sent: the commit times out. */
    public void neverAnswerNextCommit() {
        this.withholdNextConfirmation = true;
    }

    @Override
    public void close() {
        server.shutdownNow();
        try {
            server.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    // ---- the event store ----

    /** Stores a transaction if the sequence rule and the injected refusal allow; @return why not, or null. */
    private String commit(List<Event> append) {
        Refusal refusing = refusal;
        List<EventStream> toWake;
        synchronized (this) {
            if (refusing != null && append.stream().anyMatch(refusing.matches)) {
                refusedTransactions++;
                return refusing.errorCode + ": refused by the stand-in";
            }
            Map<String, Long> next = new LinkedHashMap<>();
            for (Event event : append) {
                if (event.getAggregateType().isEmpty() && event.getAggregateIdentifier().isEmpty()) {
                    continue; // not a domain event
                }
                String aggregate = event.getAggregateIdentifier();
                long expected = next.computeIfAbsent(aggregate, a -> (long) aggregates.getOrDefault(a, List.of()).size());
                if (event.getAggregateSequenceNumber() != expected) {
                    refusedTransactions++;
                    return "AXONIQ-2000: Invalid sequence number " + event.getAggregateSequenceNumber()
                            + " for aggregate " + aggregate + ", expected " + expected;
                }
                next.put(aggregate, expected + 1);
            }
            for (Event event : append) {
                events.add(event);
                if (!event.getAggregateIdentifier().isEmpty()) {
                    aggregates.computeIfAbsent(event.getAggregateIdentifier(), a -> new ArrayList<>()).add(event);
                }
            }
            committedTransactions++;
            transactions.add(List.copyOf(append));
            toWake = List.copyOf(eventStreams);
        }
        toWake.forEach(EventStream::pump);
        return null;
    }

    private static StatusRuntimeException axonServerError(Status status, String errorCode, String message) {
        Metadata trailers = new Metadata();
        trailers.put(ERROR_CODE, errorCode);
        return status.withDescription(message).asRuntimeException(trailers);
    }

    private final class Events extends EventStoreGrpc.EventStoreImplBase {

        @Override
        public StreamObserver<Event> appendEvent(StreamObserver<Confirmation> confirmation) {
            List<Event> transaction = new ArrayList<>();
            return new StreamObserver<>() {
                private boolean failed;

                @Override
                public void onNext(Event event) {
                    if (failed) {
                        return;
                    }
                    if (failNextAppend) {
                        failNextAppend = false;
                        failed = true;
                        confirmation.onError(Status.UNAVAILABLE.withDescription("connection lost (stand-in)")
                                                               .asRuntimeException());
                        return;
                    }
                    transaction.add(event);
                }

                @Override
                public void onError(Throwable cancelled) {
                    synchronized (AxonServerStandIn.this) {
                        rolledBackTransactions++;
                    }
                }

                @Override
                public void onCompleted() {
                    if (failed) {
                        return;
                    }
                    String refused = commit(transaction);
                    if (refused != null) {
                        String code = refused.substring(0, refused.indexOf(':'));
                        confirmation.onError(axonServerError(
                                code.equals("AXONIQ-2000") ? Status.OUT_OF_RANGE : Status.INVALID_ARGUMENT,
                                code, refused));
                    } else if (withholdNextConfirmation) {
                        withholdNextConfirmation = false;
                        withheld.add(confirmation);
                    } else {
                        confirmation.onNext(Confirmation.newBuilder().setSuccess(true).build());
                        confirmation.onCompleted();
                    }
                }
            };
        }

        @Override
        public void appendSnapshot(Event request, StreamObserver<Confirmation> responseObserver) {
            responseObserver.onNext(Confirmation.newBuilder().setSuccess(true).build());
            responseObserver.onCompleted();
        }

        @Override
        public void listAggregateEvents(GetAggregateEventsRequest request, StreamObserver<Event> responseObserver) {
            long max = request.getMaxSequence() > 0 ? request.getMaxSequence() : Long.MAX_VALUE;
            for (Event event : eventsOf(request.getAggregateId())) {
                if (event.getAggregateSequenceNumber() >= request.getInitialSequence()
                        && event.getAggregateSequenceNumber() <= max) {
                    responseObserver.onNext(event);
                }
            }
            responseObserver.onCompleted();
        }

        @Override
        public void listAggregateSnapshots(GetAggregateSnapshotsRequest request,
                                           StreamObserver<Event> responseObserver) {
            responseObserver.onCompleted();
        }

        @Override
        public void readHighestSequenceNr(ReadHighestSequenceNrRequest request,
                                          StreamObserver<ReadHighestSequenceNrResponse> responseObserver) {
            responseObserver.onNext(ReadHighestSequenceNrResponse.newBuilder()
                                                                 .setToSequenceNr(eventsOf(request.getAggregateId())
                                                                                          .size() - 1L)
                                                                 .build());
            responseObserver.onCompleted();
        }

        @Override
        public void getFirstToken(GetFirstTokenRequest request, StreamObserver<TrackingToken> responseObserver) {
            responseObserver.onNext(TrackingToken.newBuilder().setToken(0).build());
            responseObserver.onCompleted();
        }

        @Override
        public void getLastToken(GetLastTokenRequest request, StreamObserver<TrackingToken> responseObserver) {
            long next;
            synchronized (AxonServerStandIn.this) {
                next = events.size();
            }
            responseObserver.onNext(TrackingToken.newBuilder().setToken(next).build());
            responseObserver.onCompleted();
        }

        @Override
        public StreamObserver<GetEventsRequest> listEvents(StreamObserver<EventWithToken> responseObserver) {
            EventStream stream = new EventStream(responseObserver);
            eventStreams.add(stream);
            return new StreamObserver<>() {
                @Override
                public void onNext(GetEventsRequest request) {
                    stream.request(request);
                }

                @Override
                public void onError(Throwable t) {
                    eventStreams.remove(stream);
                }

                @Override
                public void onCompleted() {
                    eventStreams.remove(stream);
                    stream.close();
                }
            };
        }
    }

    /** One tracking reader: sends stored events from its token on, as many as it has permits for. */
    private final class EventStream {

        private final StreamObserver<EventWithToken> out;
        private long nextToken = -1;
        private long permits;
        private boolean closed;

        EventStream(StreamObserver<EventWithToken> out) {
            this.out = out;
        }

        synchronized void request(GetEventsRequest request) {
            if (nextToken < 0) {
                nextToken = request.getTrackingToken();
            }
            permits += request.getNumberOfPermits();
            pump();
        }

        synchronized void close() {
            if (!closed) {
                closed = true;
                out.onCompleted();
            }
        }

        synchronized void pump() {
            while (!closed && nextToken >= 0 && permits > 0) {
                Event event;
                synchronized (AxonServerStandIn.this) {
                    if (nextToken >= events.size()) {
                        return;
                    }
                    event = events.get((int) nextToken);
                }
                out.onNext(EventWithToken.newBuilder().setToken(nextToken).setEvent(event).build());
                nextToken++;
                permits--;
            }
        }
    }

    // ---- the platform ----

    private final class Platform extends PlatformServiceGrpc.PlatformServiceImplBase {

        @Override
        public void getPlatformServer(ClientIdentification request, StreamObserver<PlatformInfo> responseObserver) {
            responseObserver.onNext(PlatformInfo.newBuilder()
                                                .setPrimary(NodeInfo.newBuilder()
                                                                    .setHostName("localhost")
                                                                    .setGrpcPort(server.getPort())
                                                                    .setNodeName("axon-server-stand-in")
                                                                    .build())
                                                .setSameConnection(true)
                                                .build());
            responseObserver.onCompleted();
        }

        @Override
        public StreamObserver<PlatformInboundInstruction> openStream(
                StreamObserver<PlatformOutboundInstruction> responseObserver) {
            return new StreamObserver<>() {
                @Override
                public void onNext(PlatformInboundInstruction instruction) {
                    synchronized (responseObserver) {
                        if (instruction.hasHeartbeat()) {
                            responseObserver.onNext(PlatformOutboundInstruction.newBuilder()
                                                                               .setHeartbeat(instruction.getHeartbeat())
                                                                               .build());
                        }
                        if (!instruction.getInstructionId().isEmpty()) {
                            responseObserver.onNext(PlatformOutboundInstruction.newBuilder()
                                                                               .setAck(ack(instruction.getInstructionId()))
                                                                               .build());
                        }
                    }
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onCompleted() {
                    synchronized (responseObserver) {
                        responseObserver.onCompleted();
                    }
                }
            };
        }
    }

    private static InstructionAck ack(String instructionId) {
        return InstructionAck.newBuilder().setInstructionId(instructionId).setSuccess(true).build();
    }

    // ---- commands ----

    /** One client's command stream: the commands it subscribed to are sent to it. */
    private final class CommandStream {

        private final StreamObserver<CommandProviderInbound> out;

        CommandStream(StreamObserver<CommandProviderInbound> out) {
            this.out = out;
        }

        synchronized void send(CommandProviderInbound message) {
            out.onNext(message);
        }
    }

    private final class Commands extends CommandServiceGrpc.CommandServiceImplBase {

        @Override
        public StreamObserver<CommandProviderOutbound> openStream(
                StreamObserver<CommandProviderInbound> responseObserver) {
            CommandStream stream = new CommandStream(responseObserver);
            return new StreamObserver<>() {
                @Override
                public void onNext(CommandProviderOutbound message) {
                    switch (message.getRequestCase()) {
                        case SUBSCRIBE -> commandHandlers.put(message.getSubscribe().getCommand(), stream);
                        case UNSUBSCRIBE -> commandHandlers.remove(message.getUnsubscribe().getCommand(), stream);
                        case COMMAND_RESPONSE -> {
                            CommandResponse response = message.getCommandResponse();
                            StreamObserver<CommandResponse> caller =
                                    pendingCommands.remove(response.getRequestIdentifier());
                            if (caller != null) {
                                caller.onNext(response);
                                caller.onCompleted();
                            }
                        }
                        default -> {
                            // flow control (permits are not counted: the stand-in sends whatever is dispatched), acks
                        }
                    }
                    if (!message.getInstructionId().isEmpty()) {
                        stream.send(CommandProviderInbound.newBuilder()
                                                          .setAck(ack(message.getInstructionId()))
                                                          .build());
                    }
                }

                @Override
                public void onError(Throwable t) {
                    commandHandlers.values().removeIf(s -> s == stream);
                }

                @Override
                public void onCompleted() {
                    commandHandlers.values().removeIf(s -> s == stream);
                    responseObserver.onCompleted();
                }
            };
        }

        @Override
        public void dispatch(Command command, StreamObserver<CommandResponse> responseObserver) {
            CommandStream handler = commandHandlers.get(command.getName());
            if (handler == null) {
                responseObserver.onNext(
                        CommandResponse.newBuilder()
                                       .setRequestIdentifier(command.getMessageIdentifier())
                                       .setErrorCode("AXONIQ-4000")
                                       .setErrorMessage(ErrorMessage.newBuilder()
                                                                    .setMessage("No handler for command: "
                                                                                        + command.getName())
                                                                    .build())
                                       .build());
                responseObserver.onCompleted();
                return;
            }
            pendingCommands.put(command.getMessageIdentifier(), responseObserver);
            dispatchedCommands.incrementAndGet();
            handler.send(CommandProviderInbound.newBuilder().setCommand(command).build());
        }
    }

    // ---- queries: subscriptions accepted, nothing routed ----

    private static final class Queries extends QueryServiceGrpc.QueryServiceImplBase {

        @Override
        public StreamObserver<QueryProviderOutbound> openStream(StreamObserver<QueryProviderInbound> responseObserver) {
            return new StreamObserver<>() {
                @Override
                public void onNext(QueryProviderOutbound message) {
                    if (!message.getInstructionId().isEmpty()) {
                        synchronized (responseObserver) {
                            responseObserver.onNext(QueryProviderInbound.newBuilder()
                                                                        .setAck(ack(message.getInstructionId()))
                                                                        .build());
                        }
                    }
                }

                @Override
                public void onError(Throwable t) {
                }

                @Override
                public void onCompleted() {
                    synchronized (responseObserver) {
                        responseObserver.onCompleted();
                    }
                }
            };
        }
    }

    private record Refusal(Predicate<Event> matches, String errorCode) {
    }
}
