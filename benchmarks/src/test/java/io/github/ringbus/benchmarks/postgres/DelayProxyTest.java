package io.github.ringbus.benchmarks.postgres;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link DelayProxy}: every byte arrives, in order, and a request and its answer take at least the round trip asked
 * for (and, measured here on whatever machine runs the tests, not milliseconds more).
 */
class DelayProxyTest {

    private ServerSocket echo;

    @BeforeEach
    void startEcho() throws IOException {
        echo = new ServerSocket(0, 16, InetAddress.getLoopbackAddress());
        Thread server = new Thread(() -> {
            while (!echo.isClosed()) {
                try {
                    Socket socket = echo.accept();
                    socket.setTcpNoDelay(true);
                    Thread pump = new Thread(() -> {
                        try (socket; InputStream in = socket.getInputStream();
                             OutputStream out = socket.getOutputStream()) {
                            in.transferTo(out);
                        } catch (IOException e) {
                            // the client left
                        }
                    });
                    pump.setDaemon(true);
                    pump.start();
                } catch (IOException e) {
                    return;
                }
            }
        });
        server.setDaemon(true);
        server.start();
    }

    @AfterEach
    void stopEcho() throws IOException {
        echo.close();
    }

    @Test
    void everyByteArrivesInOrder() throws Exception {
        byte[] sent = new byte[1 << 20];
        new Random(7).nextBytes(sent);
        try (DelayProxy proxy = DelayProxy.start("localhost", echo.getLocalPort(), 500);
             Socket client = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            Thread writer = new Thread(() -> {
                try {
                    client.getOutputStream().write(sent);
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            });
            writer.start();
            byte[] received = new byte[sent.length];
            new DataInputStream(client.getInputStream()).readFully(received);
            writer.join();
            assertArrayEquals(sent, received);
        }
    }

    @Test
    void aRoundTripTakesAtLeastTheDelayAskedForAndNotMillisecondsMore() throws Exception {
        for (long roundTripMicros : new long[]{0, 200, 500, 1_000}) {
            long[] micros = roundTrips(roundTripMicros, 400);
            Arrays.sort(micros);
            long median = micros[micros.length / 2];
            long p90 = micros[micros.length * 9 / 10];
            System.out.printf("delay proxy, %d us asked: round trip min %d us, median %d us, p90 %d us, max %d us%n",
                              roundTripMicros, micros[0], median, p90, micros[micros.length - 1]);
            assertTrue(micros[0] >= roundTripMicros, "a round trip of " + micros[0] + " us, under the "
                    + roundTripMicros + " us asked for");
            // Loose on purpose (the machines are shared): it catches a timer that ticks in milliseconds.
            assertTrue(median < roundTripMicros + 1_000, "median " + median + " us for " + roundTripMicros
                    + " us asked");
        }
    }

    @Test
    void aNegativeDelayIsRefused() {
        IllegalArgumentException refused = assertThrows(IllegalArgumentException.class,
                                                        () -> DelayProxy.start("localhost", 1, -1));
        assertTrue(refused.getMessage().contains("roundTripMicros must be at least 0"), refused.getMessage());
    }

    private long[] roundTrips(long roundTripMicros, int count) throws IOException {
        try (DelayProxy proxy = DelayProxy.start("localhost", echo.getLocalPort(), roundTripMicros);
             Socket client = new Socket(InetAddress.getLoopbackAddress(), proxy.port())) {
            client.setTcpNoDelay(true);
            OutputStream out = client.getOutputStream();
            DataInputStream in = new DataInputStream(client.getInputStream());
            byte[] ping = new byte[64];
            byte[] pong = new byte[64];
            for (int i = 0; i < 50; i++) { // warm up
                out.write(ping);
                in.readFully(pong);
            }
            long[] micros = new long[count];
            for (int i = 0; i < count; i++) {
                long start = System.nanoTime();
                out.write(ping);
                in.readFully(pong);
                micros[i] = TimeUnit.NANOSECONDS.toMicros(System.nanoTime() - start);
            }
            return micros;
        }
    }
}
