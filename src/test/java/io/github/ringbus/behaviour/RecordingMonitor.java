package io.github.ringbus.behaviour;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.monitoring.MessageMonitor;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;

/**
 * A {@link MessageMonitor} that records what it is told, as lines such as {@code "ingested Open"},
 * {@code "success Open"}, {@code "failure Deposit NoHandlerForCommandException"} (the payload's simple class name),
 * and that throws, on demand, when a command is ingested or reported.
 */
final class RecordingMonitor implements MessageMonitor<CommandMessage<?>> {

    final List<String> lines = new CopyOnWriteArrayList<>();
    volatile Predicate<CommandMessage<?>> throwOnIngest = command -> false;
    volatile boolean throwOnSuccess;
    volatile boolean throwOnFailure;

    private static String name(CommandMessage<?> command) {
        return command.getPayload() == null ? command.getCommandName()
                                            : command.getPayload().getClass().getSimpleName();
    }

    @Override
    public MonitorCallback onMessageIngested(CommandMessage<?> message) {
        String name = name(message);
        lines.add("ingested " + name);
        if (throwOnIngest.test(message)) {
            throw new IllegalStateException("the monitor fails on ingesting " + name);
        }
        return new MonitorCallback() {
            @Override
            public void reportSuccess() {
                lines.add("success " + name);
                if (throwOnSuccess) {
                    throw new IllegalStateException("the monitor fails on reporting the success of " + name);
                }
            }

            @Override
            public void reportFailure(Throwable cause) {
                lines.add("failure " + name + " " + cause.getClass().getSimpleName());
                if (throwOnFailure) {
                    throw new IllegalStateException("the monitor fails on reporting the failure of " + name);
                }
            }

            @Override
            public void reportIgnored() {
                lines.add("ignored " + name);
            }
        };
    }
}
