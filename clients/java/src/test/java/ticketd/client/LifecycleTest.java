package ticketd.client;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.atomic.AtomicReference;

/** close, waits with a bound, interrupts. */
class LifecycleTest {
    static final long A = ClientTest.A;

    static long clientThreads() {
        return Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().startsWith("ticketd-client-") && t.isAlive()).count();
    }

    @Test
    void closeStopsEverything() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A)) {
            TicketdClient c = TicketdClient.builder().endpoints(a.url).build();
            c.next();
            c.ticket("orders");
            a.delayMs = 5000; // the next refill hangs
            AtomicReference<Throwable> waiter = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    for (;;) {
                        c.next();
                    }
                } catch (Throwable e) {
                    waiter.set(e);
                }
            });
            t.start();
            Check.eventually(5000, "the caller waits", () -> c.stats().ids().waits() >= 2);
            long t0 = System.nanoTime();
            c.close();
            long ms = (System.nanoTime() - t0) / 1_000_000;
            t.join(5000);
            Check.that(!t.isAlive(), "the waiting caller still waits after close");
            Check.that(waiter.get() instanceof ClosedException, "the waiting caller got " + waiter.get());
            Check.that(ms < 3000, "close took " + ms + " ms with a request in flight");
            Check.eq(clientThreads(), 0L, "client threads alive after close");
            Check.fails(ClosedException.class, c::next);
            Check.fails(ClosedException.class, () -> c.ticket("orders"));
            Check.fails(ClosedException.class, () -> c.sequence("other"));
            c.close(); // idempotent
        }
    }

    @Test
    void closeAbortsConnect() throws Exception {
        // A listen queue that is full drops the SYN: the refill's connect
        // would wait for its call timeout (10 s); close does not.
        Check.that(Files.exists(Path.of("/proc/net/tcp")), "needs Linux: a full listen queue drops SYNs, /proc/net/tcp shows them");
        List<Socket> fillers = new ArrayList<>();
        try (ServerSocket l = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            int port = l.getLocalPort();
            for (boolean full = false; !full;) {
                Check.that(fillers.size() < 8, "the listen queue of " + port + " never filled");
                Socket s = new Socket();
                try {
                    s.connect(new InetSocketAddress(l.getInetAddress(), port), 300);
                    fillers.add(s);
                } catch (SocketTimeoutException e) {
                    s.close();
                    full = true;
                }
            }
            TicketdClient c = TicketdClient.builder().endpoints("http://127.0.0.1:" + port)
                    .maxAge(Duration.ofSeconds(30)).callTimeout(Duration.ofSeconds(10)).build();
            try {
                Check.eventually(5000, "the client's SYN", () -> synSent(port));
                closeWithin(c, 2000);
            } finally {
                c.close();
            }
        } finally {
            for (Socket s : fillers) {
                s.close();
            }
        }
    }

    @Test
    void closeAbortsTlsHandshake() throws Exception {
        // An endpoint that accepts TCP and never answers the ClientHello.
        try (ServerSocket l = new ServerSocket(0, 8, InetAddress.getLoopbackAddress())) {
            l.setSoTimeout(10_000);
            TicketdClient c = TicketdClient.builder().endpoints("https://127.0.0.1:" + l.getLocalPort())
                    .maxAge(Duration.ofSeconds(30)).callTimeout(Duration.ofSeconds(10)).build();
            try (Socket s = l.accept()) {
                s.setSoTimeout(10_000);
                Check.that(s.getInputStream().read() >= 0, "no ClientHello"); // the client now waits for an answer
                closeWithin(c, 2000);
            } finally {
                c.close();
            }
        }
    }

    /** Closes c, which must return within ms and leave no thread of its own. */
    static void closeWithin(TicketdClient c, long ms) {
        long t0 = System.nanoTime();
        c.close();
        long took = (System.nanoTime() - t0) / 1_000_000;
        Check.that(took < ms, "close took " + took + " ms, want under " + ms + " (the call timeout is 10 s)");
        Check.eq(clientThreads(), 0L, "client threads alive after close");
    }

    /**
     * Whether a connection to 127.0.0.1:port waits in SYN_SENT (the JDK's
     * sockets are IPv6 ones where it can: 127.0.0.1 is then ::ffff:127.0.0.1,
     * in /proc/net/tcp6).
     */
    static boolean synSent(int port) {
        String want = String.format(Locale.ROOT, "0100007F:%04X", port);
        try {
            for (String file : List.of("/proc/net/tcp", "/proc/net/tcp6")) {
                if (!Files.exists(Path.of(file))) {
                    continue;
                }
                for (String line : Files.readAllLines(Path.of(file))) {
                    String[] f = line.trim().split("\\s+");
                    if (f.length > 3 && f[2].endsWith(want) && f[3].equals("02")) {
                        return true;
                    }
                }
            }
            return false;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void waitBounded() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(a.url).build()) {
            c.next();
            c.fill(new long[15]); // the first batch of 16, spent
            a.delayMs = 2000;
            Thread.sleep(50);
            long t0 = System.nanoTime();
            // Empty the buffer, then one call must wait for the slow refill.
            WaitTimeoutException e = Check.fails(WaitTimeoutException.class, () -> {
                for (int i = 0; i < 100_000; i++) {
                    c.next(Duration.ofMillis(100));
                }
            });
            long ms = (System.nanoTime() - t0) / 1_000_000;
            Check.that(ms < 1500, "next(100 ms) returned after " + ms + " ms");
            Check.contains(e.getMessage(), "/v1/ids", "message");
            WaitTimeoutException f = Check.fails(WaitTimeoutException.class, () -> c.fill(new long[100_000], Duration.ofMillis(50)));
            Check.that(f.filled() >= 0 && f.filled() < 100_000, "filled " + f.filled());
        }
    }

    @Test
    void interruptEndsWait() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(a.url).maxAge(Duration.ofSeconds(10)).build()) {
            a.delayMs = 3000;
            AtomicReference<Throwable> got = new AtomicReference<>();
            AtomicReference<Boolean> flag = new AtomicReference<>();
            Thread t = new Thread(() -> {
                try {
                    c.next();
                } catch (Throwable e) {
                    got.set(e);
                    flag.set(Thread.currentThread().isInterrupted());
                }
            });
            t.start();
            Thread.sleep(200);
            t.interrupt();
            t.join(2000);
            Check.that(got.get() instanceof WaitTimeoutException, "an interrupted caller got " + got.get());
            Check.eq(flag.get(), Boolean.TRUE, "interrupt status kept");
        }
    }
}
