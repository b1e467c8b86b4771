/**
 * The bus's settings and routing: what a full ring does, how stages wait, when events are published, and which
 * handler and aggregate each command goes to.
 */
package io.github.ringbus.bus;
