package io.github.ringbus;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import org.axonframework.eventsourcing.eventstore.EventStoreException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * How the store stage reads a failed append to Axon Server: the gRPC status {@code AxonServerEventStore} rethrows,
 * with the {@code AxonIQ-ErrorCode} trailer Axon Server sets, anywhere in the failure's causes.
 */
class AxonServerFailuresTest {

    private static StatusRuntimeException axonServerError(Status status, String code) {
        Metadata trailers = new Metadata();
        trailers.put(Metadata.Key.of("AxonIQ-ErrorCode", Metadata.ASCII_STRING_MARSHALLER), code);
        return status.withDescription("refused by the server").asRuntimeException(trailers);
    }

    @Test
    void anInvalidEventSequenceIsARolledBackSequenceConflict() {
        Throwable failure = new EventStoreException("append failed",
                                                    axonServerError(Status.OUT_OF_RANGE, "AXONIQ-2000"));

        assertThat(StoreFailures.rolledBack(failure)).isTrue();
        assertThat(StoreFailures.sequenceConflict(failure)).isTrue();
        assertThat(StoreFailures.unreachable(failure)).isFalse();
    }

    @Test
    void aPayloadTooLargeIsRolledBackButNoConflict() {
        Throwable failure = axonServerError(Status.INVALID_ARGUMENT, "AXONIQ-2001");

        assertThat(StoreFailures.rolledBack(failure)).isTrue();
        assertThat(StoreFailures.sequenceConflict(failure)).isFalse();
        assertThat(StoreFailures.unreachable(failure)).isFalse();
    }

    @Test
    void aContextWithoutLeaderIsRolledBackAndUnreachable() {
        Throwable failure = axonServerError(Status.UNAVAILABLE, "AXONIQ-2100");

        assertThat(StoreFailures.rolledBack(failure)).isTrue();
        assertThat(StoreFailures.unreachable(failure)).isTrue();
    }

    @Test
    void aLostConnectionIsUnreachableWithAnUnknownOutcome() {
        Throwable failure = Status.UNAVAILABLE.withDescription("io exception").asRuntimeException();

        assertThat(StoreFailures.unreachable(failure)).isTrue();
        assertThat(StoreFailures.rolledBack(failure)).isFalse();
        assertThat(StoreFailures.sequenceConflict(failure)).isFalse();
    }

    @Test
    void aConnectionFailedCodeIsUnreachable() {
        assertThat(StoreFailures.unreachable(axonServerError(Status.INTERNAL, "AXONIQ-3001"))).isTrue();
    }

    @Test
    void aCommitWithoutAnswerSaysNothing() {
        Throwable timeout = new org.axonframework.messaging.ExecutionException(
                "Timeout while executing request", new java.util.concurrent.TimeoutException());

        assertThat(StoreFailures.rolledBack(timeout)).isFalse();
        assertThat(StoreFailures.unreachable(timeout)).isFalse();
        assertThat(StoreFailures.sequenceConflict(timeout)).isFalse();
    }

    @Test
    void aGrpcStatusWithoutCodeOtherThanUnavailableSaysNothing() {
        Throwable failure = Status.CANCELLED.asRuntimeException();

        assertThat(StoreFailures.rolledBack(failure)).isFalse();
        assertThat(StoreFailures.unreachable(failure)).isFalse();
    }
}
