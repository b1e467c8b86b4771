package io.github.ringbus.examples.axonserver;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * An Axon application with the starter's defaults: Axon Server stores its events and routes its commands, and
 * ringbus, found on the class path, is the local segment Axon Server routes this node's commands to. No setting of
 * ringbus's is needed; {@code axon.axonserver.servers} says where Axon Server runs (localhost:8124 by default).
 */
@SpringBootApplication
public class AxonServerApplication {

    public static void main(String[] args) {
        SpringApplication.run(AxonServerApplication.class, args);
    }
}
