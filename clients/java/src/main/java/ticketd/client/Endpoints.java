package ticketd.client;

import java.net.http.HttpTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The ticketd endpoints as the client sees them: which is current (refills
 * try it first, so that IDs increase while it works), which are up, and the
 * background probes that let a skipped one rejoin. Fields are guarded by this.
 */
final class Endpoints {
    /** One ticketd. */
    static final class Endpoint {
        final String base;
        boolean up = true;
        Exception lastErr; // of the last failed request
        Exception probeErr; // of the last probe; null once one succeeds
        long requests, failures, rejected, probes;

        Endpoint(String base) {
            this.base = base;
        }
    }

    private final TicketdClient c;
    final Endpoint[] eps;
    private int cur;
    private final AtomicBoolean probing = new AtomicBoolean();

    Endpoints(TicketdClient c, List<String> bases) {
        this.c = c;
        this.eps = new Endpoint[bases.size()];
        for (int i = 0; i < eps.length; i++) {
            eps[i] = new Endpoint(bases.get(i));
        }
    }

    int size() {
        return eps.length;
    }

    /**
     * The endpoints a refill should try first, in order: the current one, then
     * the others that are up, in the configured order. When none is up, all of
     * them, and lastResort[0] is set.
     */
    synchronized int[] pick(boolean[] lastResort) {
        int[] order = new int[eps.length];
        int k = 0;
        if (eps[cur].up) {
            order[k++] = cur;
        }
        for (int i = 0; i < eps.length; i++) {
            if (i != cur && eps[i].up) {
                order[k++] = i;
            }
        }
        if (k == 0) {
            lastResort[0] = true;
            return allLocked();
        }
        lastResort[0] = false;
        return java.util.Arrays.copyOf(order, k);
    }

    /** Every endpoint, the current one first, then in the configured order. */
    synchronized int[] all() {
        return allLocked();
    }

    private int[] allLocked() {
        int[] order = new int[eps.length];
        order[0] = cur;
        int k = 1;
        for (int i = 0; i < eps.length; i++) {
            if (i != cur) {
                order[k++] = i;
            }
        }
        return order;
    }

    String base(int i) {
        return eps[i].base;
    }

    /** A batch came from endpoint i, which becomes the current one (and is up again). */
    synchronized void succeeded(int i) {
        Endpoint e = eps[i];
        e.requests++;
        e.up = true;
        e.probeErr = null;
        cur = i;
    }

    /**
     * A call to endpoint i failed; with skip, refills skip it until a probe
     * finds it ready. A 4xx is the request's fault, not the endpoint's: it
     * counts as rejected, neither as a failure nor as the endpoint's last
     * error.
     */
    void failed(int i, Exception err, boolean skip) {
        boolean down;
        synchronized (this) {
            Endpoint e = eps[i];
            e.requests++;
            if (err.getCause() instanceof RejectedException) {
                e.rejected++;
                return;
            }
            e.failures++;
            e.lastErr = err;
            down = skip && e.up;
            if (down) {
                e.up = false;
            }
        }
        if (down) {
            c.submit(this::probeDown); // at once, then every probeEvery
        }
    }

    /**
     * Whether a failed refill takes the endpoint out for every buffer. A 4xx
     * is the request's fault, not the endpoint's. For a sequence, a slow or
     * 5xx answer is most likely the ticket servers' (ticketd answers 503 when
     * they fail, and waits for them): the endpoint may still issue IDs, so
     * only a connection that failed takes it out.
     */
    static boolean skips(boolean ids, Exception err) {
        if (err instanceof RejectedException) {
            return false;
        }
        if (ids) {
            return true;
        }
        return !(err instanceof StatusException) && !(err instanceof HttpTimeoutException);
    }

    /** The exception of a call that found nothing buffered and no endpoint able to issue. */
    synchronized UnavailableException unavailable() {
        StringBuilder b = new StringBuilder("ticketd: no endpoint could issue: ");
        List<Exception> causes = new ArrayList<>();
        for (int i = 0; i < eps.length; i++) {
            Endpoint e = eps[i];
            if (i > 0) {
                b.append("; ");
            }
            b.append(e.base).append(e.up ? " (up): " : " (down): ");
            b.append(e.lastErr != null ? e.lastErr.getMessage() : "no error yet");
            if (e.probeErr != null) {
                b.append("; then ").append(e.probeErr.getMessage());
            }
            if (e.lastErr != null) {
                causes.add(e.lastErr);
            }
        }
        UnavailableException u = new UnavailableException(b.toString());
        for (Exception cause : causes) {
            u.addSuppressed(cause);
        }
        return u;
    }

    /**
     * Probes every endpoint that is down, concurrently (a frozen one costs
     * callTimeout, not a round of them), and wakes the buffers when one
     * rejoins. One round at a time.
     */
    void probeDown() {
        if (!probing.compareAndSet(false, true)) {
            return;
        }
        try {
            List<Integer> down = new ArrayList<>();
            synchronized (this) {
                for (int i = 0; i < eps.length; i++) {
                    if (!eps[i].up) {
                        down.add(i);
                    }
                }
            }
            if (down.isEmpty() || c.isClosed()) {
                return;
            }
            Exception[] errs = new Exception[down.size()];
            CompletableFuture<?>[] fs = new CompletableFuture<?>[down.size()];
            for (int k = 0; k < down.size(); k++) {
                int idx = k;
                String base = eps[down.get(k)].base;
                fs[k] = CompletableFuture.runAsync(() -> {
                    try {
                        c.transport().probe(base, c.settings().callTimeout);
                    } catch (Exception e) {
                        errs[idx] = e;
                    }
                }, c.pool());
            }
            try {
                CompletableFuture.allOf(fs).join();
            } catch (RuntimeException closedMeanwhile) {
                return;
            }
            boolean rejoined = false;
            synchronized (this) {
                for (int k = 0; k < down.size(); k++) {
                    Endpoint e = eps[down.get(k)];
                    e.probes++;
                    if (errs[k] == null) {
                        e.up = true;
                        e.probeErr = null;
                        rejoined = true;
                    } else {
                        e.probeErr = new ProbeException(errs[k]);
                    }
                }
            }
            if (rejoined) {
                c.wakeAll();
            }
        } finally {
            probing.set(false);
        }
    }

    /** A failed readiness probe, as Stats and UnavailableException name it. */
    static final class ProbeException extends Exception {
        private static final long serialVersionUID = 1L;

        ProbeException(Exception cause) {
            super("probe: " + Stream.FetchException.describe(cause), cause);
        }
    }

    synchronized List<Stats.EndpointStats> stats() {
        List<Stats.EndpointStats> out = new ArrayList<>();
        for (int i = 0; i < eps.length; i++) {
            Endpoint e = eps[i];
            out.add(new Stats.EndpointStats(e.base, e.up, i == cur, e.requests, e.failures, e.rejected, e.probes,
                    e.lastErr == null ? "" : e.lastErr.getMessage(),
                    e.probeErr == null ? "" : e.probeErr.getMessage()));
        }
        return List.copyOf(out);
    }
}
