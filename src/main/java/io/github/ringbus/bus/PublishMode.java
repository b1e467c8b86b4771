package io.github.ringbus.bus;

/**
 * When the publish stage hands a command's events to the event bus's subscribers, relative to the store stage.
 * <p>
 * Either way a command's callback fires only after both stages are done with it, and subscribers see the events of
 * one aggregate in the order its commands were handled.
 */
public enum PublishMode {

    /**
     * Store and publish run side by side on the events of each handled command (the default: the shortest path to
     * completion). A subscribing event handler may therefore see events whose append later fails; the caller of that
     * command then receives the store's failure, and tracking processors, which read from the store, never see those
     * events. Choose this when subscribers only feed derived state that can tolerate a rare phantom event.
     */
    PARALLEL,

    /**
     * Publish runs after the store stage and only for commands whose events were appended: subscribers see exactly
     * what is stored. Costs one more hand-off on the path to completion.
     */
    AFTER_STORE
}
