package ticketd.client;

import java.time.Duration;

/** strictlyIncreasing: after= on every refill, increasing across a switch. */
class StrictTest {
    static final long LOW = 1L << 30, HIGH = 1L << 50;

    /** Takes IDs from a (HIGH) until it fails, then from b (LOW); returns whether they kept increasing. */
    private static boolean increasingAcrossSwitch(boolean strict) throws Exception {
        try (FakeTicketd a = new FakeTicketd(HIGH); FakeTicketd b = new FakeTicketd(LOW);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).strictlyIncreasing(strict)
                        .maxAge(Duration.ofSeconds(2)).build()) {
            long prev = 0;
            boolean increasing = true;
            for (int i = 0; i < 5000; i++) {
                long v = c.next();
                increasing &= v > prev;
                prev = v;
            }
            a.status = 503;
            a.ready = false;
            long end = System.nanoTime() + 5_000_000_000L;
            boolean moved = false;
            while (!moved && System.nanoTime() < end) {
                long v = c.next();
                increasing &= v > prev;
                prev = v;
                moved = c.stats().endpoints().get(1).current() && c.stats().ids().buffered() > 0;
            }
            Check.that(moved, "the client never moved to the second endpoint");
            for (int i = 0; i < 5000; i++) {
                long v = c.next();
                increasing &= v > prev;
                prev = v;
            }
            if (strict) {
                boolean sawAfter = false;
                for (FakeTicketd.Req r : b.valueRequests()) {
                    sawAfter |= r.query().containsKey("after") && Long.parseLong(r.query().get("after")) >= HIGH;
                }
                Check.that(sawAfter, "no after= with the first endpoint's IDs in the second's requests");
            }
            return increasing;
        }
    }

    @Test
    void increasingAcrossSwitch() throws Exception {
        Check.that(increasingAcrossSwitch(true), "strictly increasing IDs decreased across a switch");
        // Without it the second endpoint's smaller IDs come out: the check above can fail.
        Check.that(!increasingAcrossSwitch(false), "plain IDs kept increasing across a switch to smaller ones");
    }

    @Test
    void refusesIDsAtOrBelowAfter() throws Exception {
        // An endpoint that ignores after= is skipped: its IDs are never handed out.
        try (FakeTicketd a = new FakeTicketd(HIGH); FakeTicketd b = new FakeTicketd(LOW);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).strictlyIncreasing(true)
                        .maxAge(Duration.ofMillis(100)).build()) {
            long last = c.next();
            a.close();
            b.body = n -> {
                java.nio.ByteBuffer bb = java.nio.ByteBuffer.allocate(8 * n);
                for (int i = 0; i < n; i++) {
                    bb.putLong(LOW + i + 1);
                }
                return bb.array();
            };
            Thread.sleep(150);
            UnavailableException e = Check.fails(UnavailableException.class, () -> {
                for (int i = 0; i < 100_000; i++) {
                    long v = c.next();
                    Check.that(v > ClientTest.A, "an ID below after= handed out: " + v);
                }
            });
            Check.contains(e.getMessage(), "asked for after", "the bad endpoint's error");
            Check.that(last >= HIGH, "first ID");
        }
    }
}
