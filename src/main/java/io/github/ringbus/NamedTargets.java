package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;

/**
 * The aggregate a command that no aggregate handles names with {@code @TargetAggregateIdentifier}: the command of an
 * external command handler (a component whose handler loads an aggregate through its repository), routed by the
 * preload stage to the handler thread that owns that aggregate. The annotated member is found once per payload type
 * ({@link AnnotatedTargetResolver}), so a command whose payload names none costs one lookup and no exception.
 * Stateless; any thread.
 * <p>
 * Tests: {@code behaviour.BadInputTest}.
 */
final class NamedTargets {

    private static final AnnotatedTargetResolver RESOLVER = new AnnotatedTargetResolver();

    private NamedTargets() {
    }

    /**
     * @param command a command
     * @return the aggregate identifier its payload names with {@code @TargetAggregateIdentifier}, or null when it
     *         names none (or names null)
     */
    static String of(CommandMessage<?> command) {
        return RESOLVER.identifierOrNull(command);
    }
}
