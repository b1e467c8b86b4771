/**
 * ringbus on several nodes: a {@link io.github.ringbus.RingCommandBus} as the local segment of Axon's own
 * {@code DistributedCommandBus}, over Axon's JGroups connector ({@code axon-jgroups}, an optional dependency), with
 * {@link io.github.ringbus.distributed.DistributedRingCommandBus}. Membership, routing (consistent hashing on the
 * routing key) and transport are Axon's and JGroups'; this package only starts and stops them in the right order
 * around the ring, and has the ring read its aggregates from the store again whenever the node's share changes.
 * <p>
 * It uses the public types of {@code io.github.ringbus} only; nothing in the core depends on it.
 */
package io.github.ringbus.distributed;
