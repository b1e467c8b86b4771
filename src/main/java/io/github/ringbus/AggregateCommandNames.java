package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessageHandlingMember;
import org.axonframework.messaging.annotation.MessageHandlingMember;
import org.axonframework.modelling.command.AggregateCreationPolicy;
import org.axonframework.modelling.command.inspection.AggregateModel;
import org.axonframework.modelling.command.inspection.CreationPolicyMember;

import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

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
}
