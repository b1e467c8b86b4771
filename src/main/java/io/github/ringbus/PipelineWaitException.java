package io.github.ringbus;

/**
 * A command dispatched from one of ringbus's pipeline threads was to be waited for, but it could only complete after
 * that very thread had finished its current work: waiting would hang the bus. The command was not dispatched. Raised
 * through the command's callback (so {@code sendAndWait} throws it) at once, on the dispatching thread.
 */
public class PipelineWaitException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message why the command cannot be waited for, and what to do instead
     */
    public PipelineWaitException(String message) {
        super(message);
    }
}
