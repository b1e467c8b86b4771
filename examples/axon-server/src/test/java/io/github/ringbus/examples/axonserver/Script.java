package io.github.ringbus.examples.axonserver;

import io.axoniq.axonserver.grpc.event.Event;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/** Runs a list of commands on a node and says what each gave, and what the stand-in stored, in comparable words. */
final class Script {

    private Script() {
    }

    /** Every command sent at once (on a ring they meet in batches), then each awaited. */
    static List<String> sendAllAtOnce(Node node, List<Object> commands) {
        List<CompletableFuture<Object>> results = new ArrayList<>();
        for (Object command : commands) {
            results.add(node.gateway().send(command));
        }
        List<String> outcomes = new ArrayList<>();
        for (CompletableFuture<Object> result : results) {
            outcomes.add(outcome(result));
        }
        return outcomes;
    }

    /** Each command sent once the one before it has its outcome. */
    static List<String> sendOneByOne(Node node, List<Object> commands) {
        List<String> outcomes = new ArrayList<>();
        for (Object command : commands) {
            outcomes.add(outcome(node.gateway().send(command)));
        }
        return outcomes;
    }

    static String outcome(CompletableFuture<?> result) {
        try {
            return "ok " + result.get(30, TimeUnit.SECONDS);
        } catch (java.util.concurrent.ExecutionException e) {
            return "failed " + rootOf(e.getCause()).getClass().getSimpleName();
        } catch (InterruptedException | java.util.concurrent.TimeoutException e) {
            throw new AssertionError("no outcome within 30 s", e);
        }
    }

    private static Throwable rootOf(Throwable failure) {
        Throwable t = failure;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /** @return the payloads of an aggregate's stored stream, as sequence number and serialized payload */
    static List<String> stored(AxonServerStandIn server, String aggregate) {
        return server.eventsOf(aggregate).stream().map(Script::describe).collect(Collectors.toList());
    }

    static String describe(Event event) {
        return event.getAggregateSequenceNumber() + " " + event.getPayload().getType() + " "
                + event.getPayload().getData().toStringUtf8().replaceAll("\\s+", "");
    }
}
