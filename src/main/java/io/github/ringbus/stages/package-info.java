/**
 * The pipeline: one LMAX Disruptor ring of preallocated {@link io.github.ringbus.stages.CommandSlot}s and the stages
 * that pass over it, each stage one thread (the handle stage one thread per segment), wired in
 * {@link io.github.ringbus.stages.Pipeline}.
 * The default ({@link io.github.ringbus.bus.PublishMode#IN_TRANSACTION}):
 * <pre>
 *   dispatch --&gt; preload --&gt; handle --&gt; store (append + subscribers, one transaction) --&gt; complete --&gt; callback
 * </pre>
 * With {@link io.github.ringbus.bus.PublishMode#PARALLEL}:
 * <pre>
 *                                   +--&gt; store ----+
 *   dispatch --&gt; preload --&gt; handle +              +--&gt; complete --&gt; callback
 *    (callers)                      +--&gt; publish --+
 *                   |         |          |     |          |
 *   finds handler,  |  runs the handler  |  hands events  |  commits the Unit of Work,
 *   target, loads   |  on the thread     |  to subscribers|  reports, calls back once
 *   the aggregate   |  owning the        |                |
 *   (cache / store) |  aggregate         appends events of many commands in one call
 * </pre>
 * A slot is claimed by a dispatcher, filled, and published; each stage waits on the sequence of the stage(s) before
 * it; the dispatchers wait only on the complete stage, which frees the slot. Every field of a slot is written by one
 * stage and read by later ones, so the ring's sequences give every hand-off its memory ordering and the slots need no
 * locks or volatile fields.
 * <p>
 * Handle stages: {@code n} instances run side by side over every slot, each handling only the slots whose segment
 * (the hash of the target aggregate's identifier) is its own, so one aggregate's commands run on one thread in ring
 * order while different aggregates run in parallel.
 * <p>
 * With {@link io.github.ringbus.bus.PublishMode#AFTER_STORE} publish runs after store; with an event store that is not
 * a {@link io.github.ringbus.events.RingEventStore} the store stage appends and notifies subscribers in one step and
 * there is no publish stage.
 */
package io.github.ringbus.stages;
