package io.github.ringbus;

import org.axonframework.commandhandling.CommandCallback;
import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.CommandResultMessage;
import org.axonframework.tracing.Span;
import org.axonframework.tracing.SpanScope;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The caller's callback with the command's dispatch span, as on Axon's buses: a failure is recorded on the span,
 * and the callback runs with the span current (on SimpleCommandBus it runs inside the dispatch). The span ends
 * after the callback, so that it spans the command from dispatch to completion. Made only when tracing is on.
 * <p>
 * Tests: {@code behaviour.TracingTest}.
 */
final class TracedCallback<C, R> implements CommandCallback<C, R> {

    private static final Logger logger = LoggerFactory.getLogger(TracedCallback.class);

    private final Span span;
    private final CommandCallback<? super C, ? super R> callback;

    TracedCallback(Span span, CommandCallback<? super C, ? super R> callback) {
        this.span = span;
        this.callback = callback;
    }

    /**
     * @param callback a callback {@code dispatch} was given or made
     * @return the caller's own callback: the one a {@link TracedCallback} wraps, else the callback itself (what
     * the bus asks of a callback, such as whether it is a {@code Future} someone waits on, it asks of this)
     */
    static CommandCallback<?, ?> callersOwn(CommandCallback<?, ?> callback) {
        return callback instanceof TracedCallback<?, ?> traced ? traced.callback : callback;
    }

    /**
     * @param callback a callback {@code dispatch} was given or made
     * @param instead  the callback to call in place of the caller's own
     * @return {@code instead}, with the dispatch span of {@code callback} if it has one
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    static CommandCallback<?, ?> replacingCallersOwn(CommandCallback<?, ?> callback, CommandCallback<?, ?> instead) {
        return callback instanceof TracedCallback<?, ?> traced ? new TracedCallback(traced.span, instead) : instead;
    }

    @Override
    public void onResult(CommandMessage<? extends C> command, CommandResultMessage<? extends R> result) {
        SpanScope scope = null;
        try {
            if (result.isExceptional()) {
                span.recordException(result.exceptionResult());
            }
            scope = span.makeCurrent();
        } catch (RuntimeException | Error tracingFailure) {
            logger.warn("Tracing failed on the dispatch span of command [{}]", command.getCommandName(),
                        tracingFailure);
        }
        try {
            callback.onResult(command, result);
        } finally {
            try {
                if (scope != null) {
                    scope.close();
                }
            } catch (RuntimeException | Error tracingFailure) {
                logger.warn("Tracing failed on the dispatch span of command [{}]", command.getCommandName(),
                            tracingFailure);
            }
            endSpan(span, command);
        }
    }

    /**
     * Ends the dispatch span of a command that was never sent (its sending was taken back, see {@link HeldEffects}),
     * if it has one; its callback is not called.
     */
    static void endUnsent(CommandCallback<?, ?> callback, CommandMessage<?> command) {
        if (callback instanceof TracedCallback<?, ?> traced) {
            endSpan(traced.span, command);
        }
    }

    /** Ends a dispatch span; what tracing throws is logged, never the command's business. */
    static void endSpan(Span span, CommandMessage<?> command) {
        try {
            span.end();
        } catch (RuntimeException | Error tracingFailure) {
            // The command was dispatched (or refused through its callback): tracing does not undo that.
            logger.warn("Tracing failed to end the dispatch span of command [{}]", command.getCommandName(),
                        tracingFailure);
        }
    }
}
