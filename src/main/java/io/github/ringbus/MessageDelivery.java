package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.axonframework.commandhandling.GenericCommandMessage;
import org.axonframework.messaging.GenericMessage;
import org.axonframework.messaging.Message;
import org.axonframework.messaging.MessageHandler;
import org.axonframework.messaging.MetaData;
import org.axonframework.messaging.unitofwork.CurrentUnitOfWork;

/**
 * The ring's handler of messages sent to one aggregate outside a command (deadlines, through
 * {@link RingRepository#send}), one per ring repository.
 * <p>
 * {@code send} puts the message in the ring as an internal command of this handler's {@link #commandName()},
 * addressed to the aggregate's identifier; the preload stage puts the aggregate in memory and routes it to the
 * handler thread that owns the aggregate, like any command for it, and the handle stage runs it here: the aggregate
 * handles the message inside its own scope, and the events it applies are stored and published with the commands of
 * the same batches. The handle stage runs it without the ring's command handler interceptors and without a command
 * span (it is no command), and discards its events on any exception, as the deadline manager's Unit of Work would.
 * <p>
 * Tests: {@code behaviour.DeadlineOnRingBusTest}, {@code behaviour.DeadlineTest}, {@code model.DeadlineScenarioTest}.
 */
final class MessageDelivery implements MessageHandler<CommandMessage<?>> {

    /** Hands a message to an aggregate in memory, on the handler thread that owns it ({@code RingRepository}'s). */
    @FunctionalInterface
    interface Recipient {

        /**
         * @return what the aggregate's handler of the message returned
         * @throws Exception what that handler threw
         */
        Object deliver(String identifier, Message<?> message) throws Exception;
    }

    private final Recipient recipient;
    private final String commandName;

    /**
     * @param aggregateType the type of the aggregates the messages go to
     * @param recipient     who hands each message to its aggregate (the repository: it knows the slot's holder)
     */
    MessageDelivery(Class<?> aggregateType, Recipient recipient) {
        this.recipient = recipient;
        this.commandName = "ringbus-deliver[" + aggregateType.getName() + "]";
    }

    /**
     * @return the command name under which deliveries to this repository's aggregates go through the ring
     */
    String commandName() {
        return commandName;
    }

    /**
     * The internal command that carries {@code message} to aggregate {@code identifier}. It has the message's
     * identifier and meta data, so that the correlation data providers of the handler's Unit of Work see what they
     * would see of the message itself.
     *
     * @param correlationData the correlation data of the sender's Unit of Work (the deadline manager's), given to the
     *                        events the aggregate applies, as they would get it in that Unit of Work
     */
    Command command(Message<?> message, String identifier, MetaData correlationData) {
        return new Command(new GenericMessage<>(message.getIdentifier(), new Target(message, identifier, correlationData),
                                                message.getMetaData()), commandName);
    }

    @Override
    public Object handle(CommandMessage<?> command) throws Exception {
        Target target = (Target) command.getPayload();
        if (!target.correlationData().isEmpty()) {
            CurrentUnitOfWork.get().registerCorrelationDataProvider(message -> target.correlationData());
        }
        return recipient.deliver(target.identifier(), target.message());
    }

    /** What a delivery carries: the message, the identifier of the aggregate it is for, the sender's correlation. */
    record Target(Message<?> message, String identifier, MetaData correlationData) {
    }

    /** The internal command of a delivery; recognised by its class by the preload stage's target resolver. */
    static final class Command extends GenericCommandMessage<Target> {

        Command(Message<Target> delegate, String commandName) {
            super(delegate, commandName);
        }

        String target() {
            return getPayload().identifier();
        }
    }
}
