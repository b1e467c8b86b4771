/**
 * Aggregate loading: the repository Axon's command handlers use under ringbus, the holders that keep each aggregate
 * in memory exactly equal to its successful commands, the preload stage's bounded cache, and target resolution.
 * See {@link io.github.ringbus.aggregates.AggregateHolder} for who owns an aggregate at each moment.
 */
package io.github.ringbus.aggregates;
