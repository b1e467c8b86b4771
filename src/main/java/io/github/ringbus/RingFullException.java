package io.github.ringbus;

import org.axonframework.common.AxonTransientException;

/**
 * Reported to a command's callback when the command found no free slot in the ring under the bus's
 * {@link FullRingPolicy}. The command was not handled; it is safe to dispatch it again later.
 */
public class RingFullException extends AxonTransientException {

    private static final long serialVersionUID = 1L;

    /**
     * @param message what was full and why the command did not wait
     */
    public RingFullException(String message) {
        super(message);
    }
}
