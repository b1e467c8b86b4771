package io.github.ringbus;

import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusException;
import io.grpc.StatusRuntimeException;

/**
 * What a failure of an append to Axon Server ({@code AxonServerEventStore}) says, read from the gRPC status the
 * connector hands on and the {@code AxonIQ-ErrorCode} trailer Axon Server sets on it (the trailer Axon's own
 * {@code GrpcExceptionParser} reads). The one place ringbus knows Axon Server's error codes; stateless.
 * <p>
 * Axon 4's {@code AxonServerEventStore} commits an append transaction by waiting for the server's confirmation and
 * rethrows what the gRPC call failed with as it is: a {@link StatusRuntimeException}, with the code in its trailers.
 * <ul>
 *     <li>{@value #INVALID_EVENT_SEQUENCE}: an aggregate's first sequence number is not the one after the stored
 *     ones, or its numbers have a gap: the server refused the whole transaction (nothing of it is stored).</li>
 *     <li>{@value #EVENT_PAYLOAD_TOO_LARGE}, {@value #TRANSACTION_ROLLED_BACK}: refused, nothing stored.</li>
 *     <li>{@value #NO_EVENT_STORE_MASTER_AVAILABLE}: the context has no leader: refused, nothing stored, and no other
 *     append can be stored either.</li>
 *     <li>{@value #CONNECTION_FAILED}, and the gRPC status {@code UNAVAILABLE} (the connection was lost or could not
 *     be made): the server cannot be reached; whether a transaction whose commit was sent was stored is unknown.</li>
 * </ul>
 * Loaded only when gRPC is on the class path ({@link #PRESENT}): applications without Axon Server's connector never
 * load the gRPC types this class names.
 */
final class AxonServerFailures {

    static final String INVALID_EVENT_SEQUENCE = "AXONIQ-2000";
    static final String EVENT_PAYLOAD_TOO_LARGE = "AXONIQ-2001";
    static final String NO_EVENT_STORE_MASTER_AVAILABLE = "AXONIQ-2100";
    static final String CONNECTION_FAILED = "AXONIQ-3001";
    static final String TRANSACTION_ROLLED_BACK = "AXONIQ-9900";

    /** True when gRPC's API is on the class path, hence when an Axon Server failure can occur at all. */
    static final boolean PRESENT = isPresent();

    private AxonServerFailures() {
    }

    /**
     * @param failure one exception of a failure's chain
     * @return true when Axon Server refused the transaction, so that nothing of it is stored
     */
    static boolean rolledBack(Throwable failure) {
        String code = errorCode(failure);
        return INVALID_EVENT_SEQUENCE.equals(code) || EVENT_PAYLOAD_TOO_LARGE.equals(code)
                || TRANSACTION_ROLLED_BACK.equals(code) || NO_EVENT_STORE_MASTER_AVAILABLE.equals(code);
    }

    /**
     * @param failure one exception of a failure's chain
     * @return true when Axon Server cannot be reached or cannot store anything now
     */
    static boolean unreachable(Throwable failure) {
        String code = errorCode(failure);
        return CONNECTION_FAILED.equals(code) || NO_EVENT_STORE_MASTER_AVAILABLE.equals(code)
                || (code == null && PRESENT && Grpc.unavailable(failure));
    }

    /**
     * @param failure one exception of a failure's chain
     * @return true when Axon Server refused the transaction because an aggregate's events do not follow the stored
     * ones: another writer appended to it (after a routing change, say)
     */
    static boolean sequenceConflict(Throwable failure) {
        return INVALID_EVENT_SEQUENCE.equals(errorCode(failure));
    }

    /** @return the {@code AxonIQ-ErrorCode} trailer of a gRPC failure, or null */
    static String errorCode(Throwable failure) {
        return PRESENT ? Grpc.errorCode(failure) : null;
    }

    private static boolean isPresent() {
        try {
            Class.forName("io.grpc.StatusRuntimeException", false, AxonServerFailures.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError absent) {
            return false;
        }
    }

    /** The gRPC types, in a class of their own that is loaded only when {@link #PRESENT}. */
    private static final class Grpc {

        private static final Metadata.Key<String> ERROR_CODE =
                Metadata.Key.of("AxonIQ-ErrorCode", Metadata.ASCII_STRING_MARSHALLER);

        static String errorCode(Throwable failure) {
            Metadata trailers = failure instanceof StatusRuntimeException runtime ? runtime.getTrailers()
                    : failure instanceof StatusException checked ? checked.getTrailers() : null;
            return trailers == null ? null : trailers.get(ERROR_CODE);
        }

        static boolean unavailable(Throwable failure) {
            Status status = failure instanceof StatusRuntimeException runtime ? runtime.getStatus()
                    : failure instanceof StatusException checked ? checked.getStatus() : null;
            return status != null && status.getCode() == Status.Code.UNAVAILABLE;
        }
    }
}
