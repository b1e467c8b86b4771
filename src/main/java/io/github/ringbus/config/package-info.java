/**
 * Plain Axon configuration: the {@code ConfigurerModule} that routes configured aggregates through ringbus.
 */
package io.github.ringbus.config;
