package io.github.ringbus;

import org.axonframework.commandhandling.CommandMessage;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Clears the interrupt flag that user code (a handler, an interceptor, a subscriber, a callback, a target resolver,
 * the event store) leaves set on a stage thread when it returns to the pipeline, and says so in the log once per
 * bus (later ones at debug level).
 * <p>
 * A stage thread belongs to the pipeline, not to the code it runs: nothing in ringbus interrupts it, so a flag found
 * set when user code returns was left by that code (a library that caught an {@code InterruptedException} and
 * restored the flag, as it should on a thread of its own) or set from outside. Left set, it would make the next
 * wait of the thread return at once or throw, and the next command's user code would find it set. On
 * SimpleCommandBus the flag stays with the caller's thread, which is the caller's to clear; on the ring, the thread
 * that comes back is the pipeline's.
 * <p>
 * Thread-safe; the check is one {@link Thread#interrupted()} call, which allocates nothing.
 * <p>
 * Tests: {@code behaviour.InterruptTest}.
 */
final class LeftInterrupts {

    private static final Logger logger = LoggerFactory.getLogger(LeftInterrupts.class);

    private final AtomicBoolean told = new AtomicBoolean();

    /**
     * Clears the calling stage thread's interrupt flag, if set.
     *
     * @param stage   the stage whose user code just returned
     * @param command the command it ran for, or null when unknown
     * @return true when the flag was set
     */
    boolean clear(String stage, CommandMessage<?> command) {
        if (!Thread.interrupted()) {
            return false;
        }
        String commandName = command == null ? "(none)" : command.getCommandName();
        if (told.compareAndSet(false, true)) {
            logger.warn("User code on ringbus stage [{}] (thread [{}], command [{}]) returned with its thread's "
                                + "interrupt flag set; ringbus cleared it and goes on. Stage threads belong to the "
                                + "pipeline: code that restores an interrupt there hands it to no one. Logged once "
                                + "per bus; later ones at debug level.",
                        stage, Thread.currentThread().getName(), commandName);
        } else if (logger.isDebugEnabled()) {
            logger.debug("Cleared the interrupt flag left on ringbus stage [{}] (thread [{}], command [{}])",
                         stage, Thread.currentThread().getName(), commandName);
        }
        return true;
    }
}
