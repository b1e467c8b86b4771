package io.github.ringbus;

/**
 * When a command's events reach the event store's subscribers (subscribing event processors), relative to storing
 * them.
 * <p>
 * In every mode a command's callback fires only after its events were stored and published, and subscribers see the
 * events of one aggregate in the order its commands were handled, each command's events as one list in the order the
 * handler produced them. The modes differ in what a subscriber's failure does and in what a subscriber may see of
 * events that end up not stored. Tracking processors read from the store: in every mode they see exactly what was
 * committed.
 * <p>
 * These modes apply with a {@link io.github.ringbus.RingEventStore}. With another event store (Axon's
 * {@code EmbeddedEventStore}) the store stage calls its {@code publish}, which appends and then calls the subscribers,
 * inside the store stage's transaction, whatever the mode; a subscriber that throws then fails the append, and the
 * store stage isolates the command as for any failed append.
 */
public enum PublishMode {

    /**
     * As on Axon's own command buses (the default): the store stage calls the subscribers of each command of a batch
     * inside the batch's transaction, before its commit, on the store stage's thread. A subscriber that throws fails
     * its own command, and nothing of that command is stored: the transaction is rolled back and the batch's other
     * commands are appended again in a fresh transaction, with their subscribers called again (see below).
     * <p>
     * What a subscriber may see: every call is made inside a transaction of the bus's {@code TransactionManager};
     * only the calls made in a transaction that commits count. When a transaction is rolled back (another command's
     * subscriber threw, the append failed, the commit failed) and the commands are tried again, the subscribers of
     * those commands are called again with the same events (same identifiers) in the new transaction. What a
     * subscriber writes through that transaction (e.g. a JPA projection, a look-up table for set-based validation)
     * is undone with the rollback and so counts once, and so does what it does through Axon (see below); state it
     * keeps outside the transaction and its Unit of Work (an in-memory map) sees those events once per attempt. A
     * command's subscribers are called at most once per attempt, and a batch makes at most one more attempt per
     * command that fails in it (plus the halving attempts of a failed append, see the store stage).
     * <p>
     * Order inside the transaction: with a transaction manager that can roll back, the batch's events are appended
     * first and then the subscribers are called (as Axon's event store does), so a failed append never reaches a
     * subscriber. With Axon's {@code NoTransactionManager} (nothing can be rolled back, e.g. Axon's in-memory engine)
     * the subscribers are called first and the events appended afterwards, so that a subscriber that throws leaves
     * nothing stored; a subscriber may then see events whose append fails.
     * <p>
     * Subscribers run in a root Unit of Work of their command (not the command's own, which waits for the complete
     * stage), in which a subscribing processor's Unit of Work nests, as on {@code SimpleCommandBus}: its transaction
     * joins the store stage's when the processor uses the same transaction manager (Spring's), its prepare-commit
     * work (a saga stored, events it published appended) is done inside that transaction, and its after-commit work
     * (a subscription-query update) only once the store stage committed, never for an attempt rolled back. A command
     * a subscriber sends enters the ring only once the attempt committed, and is dropped unsent with one rolled
     * back: each stored command's consequences are sent once, a failed command's never.
     */
    IN_TRANSACTION,

    /**
     * Store and publish run side by side, on two threads, on the events of each handled command (the shortest path to
     * completion). A subscribing event handler may therefore see events whose append later fails; the caller of that
     * command then receives the store's failure, and tracking processors never see those events. A subscriber's
     * exception is reported to the command's caller but its events stay stored. Subscribers run outside the store
     * stage's transaction. Choose this when subscribers only feed derived state that can tolerate a rare phantom
     * event.
     */
    PARALLEL,

    /**
     * Publish runs after the store stage has committed, and only for commands whose events were stored: subscribers
     * see exactly what is stored. A subscriber's exception is reported to the command's caller but its events stay
     * stored. Subscribers run outside the store stage's transaction. Costs one more hand-off on the path to
     * completion.
     */
    AFTER_STORE
}
