package ticketd.client;

import java.time.Duration;

/** Endpoints: order, failover, probes, the all-down case, what is not retried. */
class FailoverTest {
    static final long A = ClientTest.A, B = ClientTest.B;

    static boolean fromB(long v) {
        return v >= B;
    }

    @Test
    void failsOverInOrderAndStays() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).maxAge(Duration.ofSeconds(2))
                        .probeEvery(Duration.ofMillis(20)).build()) {
            Check.that(!fromB(c.next()), "the first endpoint that works gives the IDs");
            a.status = 503;
            a.ready = false;
            Check.eventually(5000, "IDs from the second endpoint after the first failed", () -> fromB(c.next()));
            Stats.EndpointStats ea = c.stats().endpoints().get(0);
            Check.that(!ea.up(), "first endpoint up after a 503");
            Check.contains(ea.lastError(), "503", "first endpoint's last error");
            Check.that(c.stats().endpoints().get(1).current(), "second endpoint current");
            // The first comes back: probes let it rejoin, but the client stays
            // with the endpoint that works (its IDs keep increasing).
            a.status = 200;
            a.ready = true;
            Check.eventually(5000, "first endpoint rejoins", () -> c.stats().endpoints().get(0).up());
            Check.that(c.stats().endpoints().get(0).probes() > 0, "no probe counted");
            for (int i = 0; i < 20_000; i++) {
                Check.that(fromB(c.next()), "moved back to the first endpoint while the second works");
            }
            b.status = 500;
            Check.eventually(5000, "IDs from the first endpoint after the second failed", () -> !fromB(c.next()));
        }
    }

    @Test
    void killedEndpointSkipped() throws Exception {
        FakeTicketd dead = new FakeTicketd(A);
        dead.close(); // its port now refuses
        try (FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(dead.url, b.url).build()) {
            for (int i = 0; i < 1000; i++) {
                Check.that(fromB(c.next()), "an ID not from the live endpoint");
            }
            Check.contains(c.stats().endpoints().get(0).lastError().toLowerCase(), "connection refused", "dead endpoint's error");
        }
    }

    @Test
    void slowEndpointSkipped() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).callTimeout(Duration.ofMillis(100))
                        .build()) {
            a.delayMs = 3000;
            long t0 = System.nanoTime();
            Check.that(fromB(c.next()), "an ID not from the endpoint that answers in time");
            long ms = (System.nanoTime() - t0) / 1_000_000;
            Check.that(ms < 2500, "first ID took " + ms + " ms: the slow endpoint was waited for");
            Check.contains(c.stats().endpoints().get(0).lastError(), "no answer within 100 ms", "slow endpoint's error");
        }
    }

    @Test
    void allDownThenBack() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).maxAge(Duration.ofMillis(500))
                        .probeEvery(Duration.ofMillis(20)).build()) {
            c.next();
            a.status = 503;
            b.status = 503;
            a.ready = false;
            b.ready = false;
            Thread.sleep(600); // what was buffered has expired
            UnavailableException e = Check.fails(UnavailableException.class, c::next);
            Check.contains(e.getMessage(), a.url, "message names the first endpoint");
            Check.contains(e.getMessage(), b.url, "message names the second endpoint");
            Check.eq(e.getSuppressed().length, 2, "each endpoint's last error suppressed");
            Check.that(c.stats().ids().refillFailures() > 0, "refillFailures");
            a.status = 200;
            a.ready = true;
            Check.eventually(5000, "IDs again once an endpoint is back", () -> {
                try {
                    c.next();
                    return true;
                } catch (UnavailableException again) {
                    return false;
                }
            });
        }
    }

    @Test
    void bufferedThroughOutage() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A);
                TicketdClient c = TicketdClient.builder().endpoints(a.url).minBatch(5000).maxBatch(5000)
                        .maxAge(Duration.ofSeconds(30)).build()) {
            c.next();
            Check.eventually(5000, "two batches buffered", () -> c.stats().ids().buffered() >= 9000);
            a.close();
            for (int i = 0; i < 8000; i++) {
                c.next(); // from the buffer: the outage is not seen
            }
            Check.fails(UnavailableException.class, () -> {
                for (int i = 0; i < 10_000; i++) {
                    c.next();
                }
            });
        }
    }

    @Test
    void rejectedNotRetriedElsewhere() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).build()) {
            RejectedException e = Check.fails(RejectedException.class, () -> c.ticket("nosuch"));
            Check.eq(e.status(), 404, "status");
            Check.contains(e.serverMessage(), "unknown sequence", "ticketd's message");
            Check.eq(e.endpoint(), a.url, "endpoint");
            for (FakeTicketd.Req r : b.valueRequests()) {
                Check.that(!r.path().startsWith("/v1/tickets"), "asked the second endpoint too: " + r.path());
            }
            Stats st = c.stats();
            Stats.EndpointStats ea = st.endpoints().get(0);
            Check.that(ea.up() && ea.current(), "a 404 took the endpoint out: " + ea);
            Check.eq(ea.failures(), 0L, "failures of the endpoint after a 404 (the request's fault)");
            Check.eq(ea.rejected(), 1L, "rejected requests");
            Check.eq(ea.lastError(), "", "the endpoint's last error after a 404");
            Check.eq(st.endpoints().get(1).requests(), 0L, "requests to the second endpoint");
            Check.eq(st.sequences().get("nosuch").refillFailures(), 1L, "the sequence's refill failures");
            Check.contains(st.sequences().get("nosuch").lastError(), "404", "the sequence's last error");
        }
    }

    @Test
    void unavailableAfterTheRefillUnderWay() throws Exception {
        // Both endpoints hold their answers: a call that comes while the first
        // refill is under way gets that refill's outcome, once it has asked each
        // endpoint with callTimeout and then each with maxAge, not after another
        // refill as well.
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B)) {
            a.delayMs = 5000;
            b.delayMs = 5000;
            try (TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).callTimeout(Duration.ofMillis(50))
                    .maxAge(Duration.ofMillis(150)).probeEvery(Duration.ofSeconds(5)).build()) {
                Check.eventually(5000, "the first refill asks", () -> !a.valueRequests().isEmpty());
                Check.fails(UnavailableException.class, () -> c.next(Duration.ofSeconds(10)));
                Stats st = c.stats();
                Check.eq(st.ids().refillFailures(), 1L, "refills failed when next threw");
                for (Stats.EndpointStats e : st.endpoints()) {
                    Check.eq(e.requests(), 2L, "requests to " + e.url());
                    Check.eq(e.failures(), 2L, "failures of " + e.url());
                }
            }
        }
    }

    @Test
    void badAnswerSkipped() throws Exception {
        // Each fault is set before the client starts: its first refill goes out at once.
        badAnswer(a -> a.body = n -> new byte[8 * n - 1], "short", "malformed answer");
        badAnswer(a -> a.contentType = "text/plain", "text", "Content-Type");
        badAnswer(a -> a.body = n -> new byte[8 * n], "zero", "not a positive int64"); // zeros: not positive IDs
    }

    /** With endpoint a answering as fault makes it, the client's IDs come from b, and a's last error says why. */
    private static void badAnswer(java.util.function.Consumer<FakeTicketd> fault, String what, String error) throws Exception {
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B)) {
            fault.accept(a);
            try (TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).build()) {
                Check.that(fromB(c.next()), "an ID from a " + what + " answer");
                Check.contains(c.stats().endpoints().get(0).lastError(), error, what + " answer's error");
            }
        }
    }

    @Test
    void sequenceFailureKeepsIDs() throws Exception {
        // A 503 on a sequence is most likely the ticket servers' trouble: the
        // call fails over, but the endpoint still serves IDs.
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).build()) {
            c.next();
            a.statusOnly = "/v1/tickets/";
            a.status = 503;
            a.statusTimes = 1;
            c.ticket("orders"); // from b
            Check.that(c.stats().endpoints().get(0).up(), "a sequence's 503 took the endpoint out for IDs");
        }
    }
}
