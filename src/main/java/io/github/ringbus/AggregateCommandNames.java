package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessageHandlingMember;
import org.axonframework.messaging.annotation.MessageHandlingMember;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.CreationPolicyMember;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The commands an aggregate type handles, as Axon's {@code AggregateAnnotationCommandHandler} subscribes them. */
final class AggregateCommandNames {

    private AggregateCommandNames() {
    }

    /**
     * @param model an aggregate's model
     * @return the names of the commands the aggregate type handles, each mapped to whether it may create the
     * aggregate (a constructor or factory handler, or a creation policy other than {@code NEVER}); unmodifiable
     */
    static Map<String, Boolean> of(AggregateModel<?> model) {
        Map<String, Boolean> names = new HashMap<>();
        for (List<? extends MessageHandlingMember<?>> handlers : model.allCommandHandlers().values()) {
            for (MessageHandlingMember<?> handler : handlers) {
                handler.unwrap(CommandMessageHandlingMember.class).ifPresent(command -> {
                    AggregateCreationPolicy policy = handler.unwrap(CreationPolicyMember.class)
                                                            .map(CreationPolicyMember::creationPolicy)
                                                            .orElse(AggregateCreationPolicy.NEVER);
                    boolean creates = command.isFactoryHandler() || policy != AggregateCreationPolicy.NEVER;
                    names.merge(command.commandName(), creates, Boolean::logicalOr);
                });
            }
        }
        return Collections.unmodifiableMap(names);
    }

    /**
     * @param model an aggregate's model
     * @return the names of the commands whose every handler always creates a new aggregate (a constructor or factory
     * handler, or {@code @CreationPolicy(ALWAYS)}): Axon's repositories run them without reading the store, and a
     * second creation of one identifier is refused by the storage engine's unique key; unmodifiable
     */
    static Set<String> alwaysCreating(AggregateModel<?> model) {
        Map<String, Boolean> always = new HashMap<>();
        for (List<? extends MessageHandlingMember<?>> handlers : model.allCommandHandlers().values()) {
            for (MessageHandlingMember<?> handler : handlers) {
                handler.unwrap(CommandMessageHandlingMember.class).ifPresent(command -> {
                    AggregateCreationPolicy policy =
                            handler.unwrap(CreationPolicyMember.class)
                                   .map(CreationPolicyMember::creationPolicy)
                                   .orElse(command.isFactoryHandler() ? AggregateCreationPolicy.ALWAYS
                                                                      : AggregateCreationPolicy.NEVER);
                    boolean creates = policy == AggregateCreationPolicy.ALWAYS
                            || (command.isFactoryHandler() && policy != AggregateCreationPolicy.CREATE_IF_MISSING);
                    always.merge(command.commandName(), creates, Boolean::logicalAnd);
                });
            }
        }
        Set<String> names = new HashSet<>();
        always.forEach((name, creates) -> {
            if (creates) {
                names.add(name);
            }
        });
        return Collections.unmodifiableSet(names);
    }
}
