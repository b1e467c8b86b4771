package io.github.ringbus.benchmarks.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * A TCP proxy on the loopback interface that delays every byte by half a chosen round trip in each direction: a
 * database "across the network" for the benchmarks, in front of the embedded PostgreSQL.
 *
 * <p>Each connection gets two pipes (client to server, server to client); each pipe has a reader thread that stamps
 * every chunk it reads with its arrival time and a writer thread that sends the chunks in order, each no earlier than
 * its arrival plus the delay. Bandwidth is not limited, only latency: a chunk read while another waits is delayed
 * from its own arrival, as on a real link. The writer parks until shortly before the chunk is due, then yields until
 * it is due, so that a delay is accurate to tens of microseconds without a thread spinning on a core the bus and the
 * server need (NetCrusher's scheduler ticks in milliseconds: 0.5 ms asked gave 2.2 ms). {@code DelayProxyTest}
 * measures the round trip it gives.
 *
 * <p>Not a network: no loss, no reordering, no bandwidth limit, no Nagle (both sockets have {@code TCP_NODELAY}, as
 * the PostgreSQL JDBC driver sets it).
 */
public final class DelayProxy implements AutoCloseable {

    /** How long before a chunk is due its writer stops parking and starts yielding. */
    private static final long PARK_UNTIL_BEFORE_NANOS = TimeUnit.MICROSECONDS.toNanos(60);
    private static final int CHUNK = 64 * 1024;

    private final ServerSocket listener;
    private final String targetHost;
    private final int targetPort;
    /** Written by whoever calibrates the proxy, read by every writer thread. */
    private volatile long oneWayNanos;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean closed;

    private DelayProxy(ServerSocket listener, String targetHost, int targetPort, long oneWayNanos) {
        this.listener = listener;
        this.targetHost = targetHost;
        this.targetPort = targetPort;
        this.oneWayNanos = oneWayNanos;
    }

    /**
     * Starts a proxy on a free loopback port.
     *
     * @param targetHost       where the connections go
     * @param targetPort       the port there
     * @param roundTripMicros  the delay added to a request and its answer together (half each way); at least 0
     */
    public static DelayProxy start(String targetHost, int targetPort, long roundTripMicros) {
        if (roundTripMicros < 0) {
            throw new IllegalArgumentException("roundTripMicros must be at least 0, but was " + roundTripMicros);
        }
        try {
            ServerSocket listener = new ServerSocket(0, 256, InetAddress.getLoopbackAddress());
            DelayProxy proxy = new DelayProxy(listener, targetHost, targetPort,
                                              TimeUnit.MICROSECONDS.toNanos(roundTripMicros) / 2);
            Thread acceptor = new Thread(proxy::accept, "delay-proxy-accept");
            acceptor.setDaemon(true);
            acceptor.start();
            return proxy;
        } catch (IOException e) {
            throw new UncheckedIOException("The delay proxy could not listen", e);
        }
    }

    /** The loopback port the proxy listens on. */
    public int port() {
        return listener.getLocalPort();
    }

    /**
     * Changes the delay, for the chunks that arrive from now on (a calibration: see {@code DurablePostgres}).
     *
     * @param roundTripMicros the delay added to a request and its answer together; at least 0
     */
    public void roundTripMicros(long roundTripMicros) {
        if (roundTripMicros < 0) {
            throw new IllegalArgumentException("roundTripMicros must be at least 0, but was " + roundTripMicros);
        }
        oneWayNanos = TimeUnit.MICROSECONDS.toNanos(roundTripMicros) / 2;
    }

    /** The delay added each way, in microseconds. */
    public long oneWayMicros() {
        return TimeUnit.NANOSECONDS.toMicros(oneWayNanos);
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = listener.accept();
                Socket server = new Socket(targetHost, targetPort);
                for (Socket socket : List.of(client, server)) {
                    socket.setTcpNoDelay(true);
                    sockets.add(socket);
                }
                int id = sockets.size() / 2;
                pipe("delay-proxy-" + id + "-up", client, server);
                pipe("delay-proxy-" + id + "-down", server, client);
            } catch (IOException e) {
                if (!closed) {
                    System.err.println("delay proxy: a connection failed: " + e);
                }
            }
        }
    }

    private void pipe(String name, Socket from, Socket to) throws IOException {
        LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        Thread reader = new Thread(() -> {
            byte[] buffer = new byte[CHUNK];
            try {
                int read;
                while ((read = in.read(buffer)) >= 0) {
                    queue.add(new Chunk(Arrays.copyOf(buffer, read), System.nanoTime() + oneWayNanos));
                }
            } catch (IOException e) {
                // the connection ended
            }
            queue.add(Chunk.END);
        }, name + "-read");
        Thread writer = new Thread(() -> {
            try {
                while (true) {
                    Chunk chunk = queue.take();
                    if (chunk == Chunk.END) {
                        to.shutdownOutput();
                        return;
                    }
                    waitUntil(chunk.due);
                    out.write(chunk.bytes);
                    out.flush();
                }
            } catch (IOException | InterruptedException e) {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, name + "-write");
        reader.setDaemon(true);
        writer.setDaemon(true);
        reader.start();
        writer.start();
    }

    /** Parks until shortly before {@code due}, then yields until it. */
    static void waitUntil(long due) {
        long remaining;
        while ((remaining = due - System.nanoTime()) > PARK_UNTIL_BEFORE_NANOS) {
            LockSupport.parkNanos(remaining - PARK_UNTIL_BEFORE_NANOS);
        }
        while (due - System.nanoTime() > 0) {
            Thread.yield();
        }
    }

    @Override
    public void close() {
        closed = true;
        closeQuietly(listener);
        for (Socket socket : sockets) {
            closeQuietly(socket);
        }
    }

    private static void closeQuietly(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            // closing anyway
        }
    }

    private record Chunk(byte[] bytes, long due) {
        static final Chunk END = new Chunk(new byte[0], 0);
    }
}
