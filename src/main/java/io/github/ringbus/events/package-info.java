/**
 * The event store ringbus splits into a store stage and a publish stage.
 */
package io.github.ringbus.events;
