package ticketd.client;

import java.time.Duration;
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
