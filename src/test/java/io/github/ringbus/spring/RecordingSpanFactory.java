package io.github.ringbus.spring;

import org.axonframework.messaging.Message;
import org.axonframework.tracing.Span;
import org.axonframework.tracing.SpanAttributesProvider;
import org.axonframework.tracing.SpanFactory;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;

/** A SpanFactory that records the name of each span started, with the thread that started it. */
class RecordingSpanFactory implements SpanFactory {

    record Started(String name, String thread) {
    }

    final List<Started> started = new CopyOnWriteArrayList<>();

    private Span span(Supplier<String> name) {
        return new Span() {
            @Override
            public Span start() {
                started.add(new Started(name.get(), Thread.currentThread().getName()));
                return this;
            }

            @Override
            public void end() {
            }

            @Override
            public Span recordException(Throwable t) {
                return this;
            }
        };
    }

    @Override
    public Span createRootTrace(Supplier<String> operationNameSupplier) {
        return span(operationNameSupplier);
    }

    @Override
    public Span createHandlerSpan(Supplier<String> operationNameSupplier, Message<?> parentMessage,
                                  boolean isChildTrace, Message<?>... linkedParents) {
        return span(operationNameSupplier);
    }

    @Override
    public Span createDispatchSpan(Supplier<String> operationNameSupplier, Message<?> parentMessage,
                                   Message<?>... linkedSiblings) {
        return span(operationNameSupplier);
    }

    @Override
    public Span createInternalSpan(Supplier<String> operationNameSupplier) {
        return span(operationNameSupplier);
    }

    @Override
    public Span createInternalSpan(Supplier<String> operationNameSupplier, Message<?> message) {
        return span(operationNameSupplier);
    }

    @Override
    public void registerSpanAttributeProvider(SpanAttributesProvider provider) {
    }

    @Override
    public <M extends Message<?>> M propagateContext(M message) {
        return message;
    }
}
