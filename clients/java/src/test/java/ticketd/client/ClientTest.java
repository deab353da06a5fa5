package ticketd.client;

import java.lang.management.ManagementFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;

/** The buffer: unique values, their order, batch sizes, age, sequences, allocations. */
class ClientTest {
    static final long A = 1L << 40; // first IDs of the fakes: far apart, so a value tells its server
    static final long B = 1L << 50;

    @Test
    void uniqueAcrossThreads() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).build()) {
            int threads = 4, each = 100_000;
            ConcurrentLinkedQueue<long[]> got = new ConcurrentLinkedQueue<>();
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                boolean useFill = t % 2 == 1;
                Thread th = new Thread(() -> {
                    long[] mine = new long[each];
                    if (useFill) {
                        for (int i = 0; i < each; i += 1000) {
                            long[] part = new long[1000];
                            c.fill(part);
                            System.arraycopy(part, 0, mine, i, 1000);
                        }
                    } else {
                        for (int i = 0; i < each; i++) {
                            mine[i] = c.next();
                        }
                    }
                    got.add(mine);
                });
                ts.add(th);
                th.start();
            }
            for (Thread th : ts) {
                th.join();
            }
            Set<Long> all = new HashSet<>();
            for (long[] mine : got) {
                for (int i = 0; i < mine.length; i++) {
                    Check.that(all.add(mine[i]), "ID " + mine[i] + " handed out twice");
                    if (i > 0 && mine[i] <= mine[i - 1]) {
                        throw new AssertionError("a thread's IDs decreased: " + mine[i - 1] + " then " + mine[i]);
                    }
                }
            }
            Check.eq(all.size(), threads * each, "distinct IDs");
            Stats.StreamStats st = c.stats().ids();
            Check.eq(st.served(), (long) threads * each, "served");
            Check.eq(st.fetched(), st.served() + st.buffered() + st.droppedByAge(), "fetched = served + buffered + dropped");
        }
    }

    @Test
    void batchGrowsAndIncreases() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).build()) {
            long prev = 0;
            for (int i = 0; i < 200_000; i++) {
                long v = c.next();
                Check.that(v > prev, "IDs decreased: " + prev + " then " + v);
                prev = v;
            }
            List<FakeTicketd.Req> rs = f.valueRequests();
            Check.eq(rs.get(0).n(), 16, "first batch");
            int max = 0;
            for (int i = 1; i < rs.size(); i++) {
                int n = rs.get(i).n(), before = rs.get(i - 1).n();
                Check.that(n == before || n == 2 * before || n == before / 2 || n == 16 || n == 10_000,
                        "batch " + before + " then " + n + ": want a double, a half or the same");
                max = Math.max(max, n);
            }
            Check.that(max >= 1024, "largest batch " + max + " after 200000 IDs taken fast, want 1024 or more");
            Check.that(c.stats().ids().batch() > 16, "stats batch " + c.stats().ids().batch());
        }
    }

    @Test
    void batchShrinksWhenSlowlyUsed() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).minBatch(16).maxBatch(128)
                        .maxAge(Duration.ofSeconds(10)).batchPeriod(Duration.ofMillis(100)).build()) {
            c.fill(new long[5000]); // batches last less than 100 ms: they grow
            int grown = c.stats().ids().batch();
            Check.that(grown > 16, "batch " + grown + " after a fast fill");
            for (int i = 0; i < 300; i++) { // 100 IDs/s: a batch of 32 or more lasts longer than 2 × 100 ms
                c.next();
                Thread.sleep(10);
            }
            int shrunk = c.stats().ids().batch();
            Check.that(shrunk < grown, "batch " + shrunk + " after slow use, want below " + grown);
        }
    }

    @Test
    void ageDrop() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).minBatch(1000).build()) {
            long first = c.next();
            long sentBefore = f.peekNextId(); // every ID below it was fetched by now
            Thread.sleep(1300); // the rest of the batch is older than maxAge (1 s)
            long later = c.next();
            Check.that(later >= sentBefore, "ID " + later + " after maxAge, want one fetched later (>= " + sentBefore + ")");
            Check.that(later > first, "IDs decreased");
            Stats.StreamStats st = c.stats().ids();
            Check.that(st.droppedByAge() >= 998, "droppedByAge " + st.droppedByAge() + ", want at least 998");
        }
    }

    @Test
    void maxAgeCountsFromTheRequest() throws Exception {
        // Age runs from when the refill was sent, not from when its answer
        // arrived: with a slow answer, the two differ by the answer's delay.
        long maxAgeMs = 500, delayMs = 300;
        try (FakeTicketd f = new FakeTicketd(A)) {
            f.delayMs = delayMs;
            try (TicketdClient c = TicketdClient.builder().endpoints(f.url).maxAge(Duration.ofMillis(maxAgeMs))
                    .callTimeout(Duration.ofMillis(maxAgeMs)).minBatch(1000).maxBatch(1000).build()) {
                long first = c.next();
                // Past maxAge since the first batch was asked for (the fake saw
                // the request after the client sent it), not since it arrived.
                long sleep = askedAt(f, first) + (maxAgeMs + 50) * 1_000_000 - System.nanoTime();
                Thread.sleep(Math.max(0, sleep / 1_000_000));
                long v = c.next();
                long ageMs = (System.nanoTime() - askedAt(f, v)) / 1_000_000;
                Check.that(ageMs < maxAgeMs, "ID " + v + " handed out " + ageMs + " ms after its request (its answer took "
                        + delayMs + " ms), want under maxAge " + maxAgeMs + " ms");
                Check.that(c.stats().ids().droppedByAge() > 0, "no ID dropped for age");
            }
        }
    }

    /** When the fake saw the request that fetched id (its IDs start at A and follow one another). */
    static long askedAt(FakeTicketd f, long id) {
        long first = A;
        for (FakeTicketd.Req r : f.valueRequests()) {
            if (r.path().equals("/v1/ids")) {
                if (id < first + r.n()) {
                    return r.atNanos();
                }
                first += r.n();
            }
        }
        throw new AssertionError("no request fetched " + id);
    }

    @Test
    void freshWhileInUse() throws Exception {
        // A caller that takes an ID every 20 ms from a buffer of 1000 never
        // runs it dry: the client fetches a fresh batch before the freshest
        // expires, so the caller does not wait once the first batch came.
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).maxAge(Duration.ofMillis(200))
                        .minBatch(1000).maxBatch(1000).build()) {
            c.next();
            for (int i = 0; i < 40; i++) {
                Thread.sleep(20);
                c.next();
            }
            Stats.StreamStats st = c.stats().ids();
            Check.that(st.refills() >= 3, "refills " + st.refills() + " in 800 ms with maxAge 200 ms");
            Check.that(st.waits() <= 2, "calls waited " + st.waits() + " times, want the first (and at most one more on a loaded machine)");
        }
    }

    @Test
    void idleClientSendsNothing() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).maxAge(Duration.ofMillis(200)).build()) {
            Check.eventually(5000, "first batch", () -> c.stats().ids().refills() == 1);
            int n = f.valueRequests().size();
            Thread.sleep(800); // four times maxAge
            Check.eq(f.valueRequests().size(), n, "value requests of a client nobody calls");
            Check.eq(c.stats().ids().refills(), 1L, "refills of a client nobody calls");
        }
    }

    @Test
    void sequences() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).maxTicketBatch(50).build()) {
            Sequence s = c.sequence("orders");
            Check.that(s == c.sequence("orders"), "sequence gives the same handle");
            Set<Long> seen = new HashSet<>();
            for (int i = 0; i < 500; i++) {
                Check.that(seen.add(s.next()), "repeat");
            }
            long[] dst = new long[300];
            c.tickets("orders", dst);
            for (long v : dst) {
                Check.that(seen.add(v), "repeat " + v);
            }
            Check.that(seen.add(c.ticket("orders")), "repeat");
            for (FakeTicketd.Req r : f.valueRequests()) {
                if (r.path().startsWith("/v1/tickets/")) {
                    Check.eq(r.path(), "/v1/tickets/orders", "path");
                    Check.that(r.n() >= 1 && r.n() <= 50, "ticket batch " + r.n() + ", want 1 to 50");
                }
            }
            Stats.StreamStats st = c.stats().sequences().get("orders");
            Check.eq(st.served(), 801L, "served");
        }
    }

    @Test
    void badNameSendsNothing() throws Exception {
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).build()) {
            IllegalArgumentException e = Check.fails(IllegalArgumentException.class, () -> c.ticket("Orders; DROP"));
            Check.contains(e.getMessage(), "bad sequence name", "message");
            Thread.sleep(100);
            for (FakeTicketd.Req r : f.requests()) {
                Check.that(!r.path().startsWith("/v1/tickets"), "a request for a bad name: " + r.path());
            }
        }
    }

    @Test
    void nextAllocatesNothing() throws Exception {
        com.sun.management.ThreadMXBean mx = (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
        long tid = Thread.currentThread().getId();
        try (FakeTicketd f = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(f.url).minBatch(5000).maxBatch(5000)
                        .maxAge(Duration.ofSeconds(60)).batchPeriod(Duration.ofSeconds(1)).build()) {
            Sequence s = c.sequence("orders");
            long least = Long.MAX_VALUE, leastSeq = Long.MAX_VALUE;
            for (int round = 0; round < 60; round++) {
                // A batch and 1001 IDs buffered: a window of 1000 calls crosses
                // no low-water mark, so no refill starts within it.
                Check.eventually(5000, "a batch and 1001 IDs buffered", () -> {
                    long b = c.stats().ids().buffered();
                    if (b >= 5000 && b < 6001) {
                        c.fill(new long[(int) (b - 4999)]); // below the mark: a refill starts
                    }
                    return b >= 6001;
                });
                s.next();
                c.next(); // the first use after a refill tells the refill thread
                long before = mx.getThreadAllocatedBytes(tid);
                for (int i = 0; i < 1000; i++) {
                    c.next();
                }
                least = Math.min(least, mx.getThreadAllocatedBytes(tid) - before);
                before = mx.getThreadAllocatedBytes(tid);
                for (int i = 0; i < 100; i++) {
                    s.next();
                }
                leastSeq = Math.min(leastSeq, mx.getThreadAllocatedBytes(tid) - before);
            }
            Check.eq(least, 0L, "bytes allocated by 1000 next() from the buffer (least of 60 windows)");
            Check.eq(leastSeq, 0L, "bytes allocated by 100 Sequence.next() from the buffer (least of 60 windows)");
        }
    }
}
