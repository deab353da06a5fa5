package ticketd.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLContext;

/**
 * ticketd's Java client: snowflake IDs and sequence values from a local
 * buffer, refilled from ticketd in the background.
 *
 * <pre>{@code
 * try (TicketdClient ids = TicketdClient.builder()
 *         .endpoints("http://10.0.0.5:8080", "http://10.0.0.6:8080")
 *         .build()) {
 *     long id = ids.next();
 * }
 * }</pre>
 *
 * <p>It keeps the contract every ticketd client keeps (docs/client.md in
 * ticketd's repository): values unique always; IDs increasing while the
 * client stays on one ticketd; an ID handed out only while less than
 * {@code maxAge} (default 1 s) has passed since the request that fetched it
 * was sent, on the monotonic clock; endpoints tried in order, a failed one
 * skipped and probed ({@code GET /readyz}) until it rejoins;
 * {@link UnavailableException} only when nothing is buffered and no endpoint
 * could issue; {@code strictlyIncreasing} IDs across switches; sequences;
 * bearer tokens and TLS; {@link #close()} stops every thread it started.
 *
 * <p>Thread-safe. {@link #next()} claims an ID from the buffer with one
 * atomic increment and one reading of {@link System#nanoTime()}: no lock, no
 * allocation. Refills run on daemon threads of the client's own
 * ({@code ticketd-client-*}), one at a time per buffer.
 */
public final class TicketdClient implements AutoCloseable {
    /** One request's deadline when none is set (or maxAge/2 if less). */
    public static final Duration DEFAULT_CALL_TIMEOUT = Duration.ofMillis(500);
    public static final Duration MIN_CALL_TIMEOUT = Duration.ofMillis(1);
    /** The age bound when none is set: Twitter's k-sorting window. */
    public static final Duration DEFAULT_MAX_AGE = Duration.ofSeconds(1);
    public static final Duration MIN_MAX_AGE = Duration.ofMillis(10);
    public static final Duration MAX_MAX_AGE = Duration.ofHours(1);
    public static final int DEFAULT_MIN_BATCH = 16;
    /** ticketd's default -max-batch: a larger batch is a 400. */
    public static final int DEFAULT_MAX_BATCH = 10_000;
    /** ticketd's largest -max-batch. */
    public static final int MAX_MAX_BATCH = 1_000_000;
    /** ticketd's default -max-ticket-batch. */
    public static final int DEFAULT_MAX_TICKET_BATCH = 1_000;
    public static final Duration MIN_BATCH_PERIOD = Duration.ofMillis(1);
    public static final Duration DEFAULT_PROBE_EVERY = Duration.ofMillis(250);
    public static final Duration MIN_PROBE_EVERY = Duration.ofMillis(10);
    public static final Duration MAX_PROBE_EVERY = Duration.ofMinutes(1);

    private final Settings cfg;
    private final Clock clock;
    private final Transport transport;
    private final Endpoints endpoints;
    private final ThreadPoolExecutor pool;
    private final ScheduledThreadPoolExecutor scheduler;
    /** The threads the client started and that may still run: close joins them. */
    private final java.util.Queue<Thread> threads = new java.util.concurrent.ConcurrentLinkedQueue<>();
    private volatile boolean closed;
    private final Stream ids;
    private final ConcurrentHashMap<String, Sequence> seqs = new ConcurrentHashMap<>();
    private final Object seqLock = new Object(); // no sequence starts once close began

    /** A new {@link Builder}: set the endpoints, then {@link Builder#build()}. */
    public static Builder builder() {
        return new Builder();
    }

    /** Test hook: the transport and the clock injected (null: the real ones). */
    TicketdClient(Settings cfg, Transport tr, java.util.function.Function<ScheduledThreadPoolExecutor, Clock> clk) {
        this.cfg = cfg;
        this.pool = new ThreadPoolExecutor(0, Integer.MAX_VALUE, 30, TimeUnit.SECONDS, new SynchronousQueue<>(),
                daemons("ticketd-client-refill-", threads));
        this.scheduler = new ScheduledThreadPoolExecutor(1, daemons("ticketd-client-timer-", threads));
        scheduler.setRemoveOnCancelPolicy(true);
        this.clock = clk == null ? new SystemClock(scheduler) : clk.apply(scheduler);
        this.transport = tr != null ? tr : httpTransport(cfg);
        this.endpoints = new Endpoints(this, cfg.endpoints);
        this.ids = new Stream(this, "", "/v1/ids", true, cfg.minBatch, cfg.maxBatch);
        clock.schedule(this::probeTick, cfg.probeEvery);
        ids.signal(); // the first batch of IDs, at once
    }

    private static Transport httpTransport(Settings cfg) {
        try {
            return new HttpTransport(cfg.sslContext, cfg.token, cfg.endpoints.stream().anyMatch(e -> e.startsWith("https:")));
        } catch (java.io.IOException e) {
            throw new IllegalStateException(e.getMessage(), e);
        }
    }

    /**
     * Daemon threads named prefix-N, each kept in started until it has ended
     * (an executor counts as terminated once its workers are done, which is
     * a moment before their threads end).
     */
    private static ThreadFactory daemons(String prefix, java.util.Queue<Thread> started) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            started.removeIf(t -> !t.isAlive());
            Thread t = new Thread(r, prefix + n.incrementAndGet());
            t.setDaemon(true);
            started.add(t);
            return t;
        };
    }

    // --- IDs ------------------------------------------------------------------

    /**
     * A snowflake ID from the buffer; waits only when the buffer is empty, until
     * a refill that began after the call ends.
     *
     * @throws UnavailableException nothing buffered and no endpoint could issue (each endpoint's last error suppressed in it)
     * @throws RejectedException    ticketd refused the request (401 without a valid token, 403 without the ids scope, 400)
     * @throws ClosedException      the client is closed
     * @throws WaitTimeoutException the waiting thread was interrupted
     */
    public long next() {
        return ids.next(Stream.NO_DEADLINE);
    }

    /** {@link #next()}, waiting at most maxWait for a refill ({@link WaitTimeoutException} past it). */
    public long next(Duration maxWait) {
        return ids.next(deadline(maxWait));
    }

    /**
     * Fills dst with snowflake IDs, waiting for refills as needed. On failure,
     * the {@link TicketdException}'s {@code filled()} says how many of dst it
     * had filled: those IDs are valid and unique.
     */
    public void fill(long[] dst) {
        ids.fill(Objects.requireNonNull(dst, "dst"), Stream.NO_DEADLINE);
    }

    /** {@link #fill(long[])}, waiting at most maxWait for refills in all. */
    public void fill(long[] dst, Duration maxWait) {
        ids.fill(Objects.requireNonNull(dst, "dst"), deadline(maxWait));
    }

    // --- sequences ------------------------------------------------------------

    /**
     * The named sequence's handle ({@code GET /v1/tickets/NAME}), its buffer
     * started on first use. Keep it for a hot loop: {@link Sequence#next()}
     * skips the lookup by name.
     *
     * @throws IllegalArgumentException a name ticketd would refuse (a lowercase letter, then up to 47 lowercase
     *                                  letters, digits or underscores); no request is sent
     * @throws ClosedException          the client is closed
     */
    public Sequence sequence(String name) {
        Sequence s = seqs.get(Objects.requireNonNull(name, "name"));
        if (s != null) {
            return s;
        }
        if (!validName(name)) {
            String shown = name.length() > 64 ? name.substring(0, 64) : name;
            throw new IllegalArgumentException("ticketd: bad sequence name \"" + shown
                    + "\": want a lowercase letter, then up to 47 lowercase letters, digits or underscores");
        }
        synchronized (seqLock) {
            if (closed) {
                throw new ClosedException();
            }
            return seqs.computeIfAbsent(name,
                    n -> new Sequence(new Stream(this, n, "/v1/tickets/" + n, false, 1, cfg.maxTicketBatch)));
        }
    }

    /** A value of the named sequence: {@code sequence(name).next()}. */
    public long ticket(String name) {
        return sequence(name).next();
    }

    /** A value of the named sequence, waiting at most maxWait for a refill. */
    public long ticket(String name, Duration maxWait) {
        return sequence(name).next(maxWait);
    }

    /** Fills dst with values of the named sequence: {@code sequence(name).fill(dst)}. */
    public void tickets(String name, long[] dst) {
        sequence(name).fill(dst);
    }

    /** Fills dst with values of the named sequence, waiting at most maxWait for refills in all. */
    public void tickets(String name, long[] dst, Duration maxWait) {
        sequence(name).fill(dst, maxWait);
    }

    /** ticketd's rule for sequence names. */
    static boolean validName(String name) {
        if (name.isEmpty() || name.length() > 48 || name.charAt(0) < 'a' || name.charAt(0) > 'z') {
            return false;
        }
        for (int i = 1; i < name.length(); i++) {
            char ch = name.charAt(i);
            if ((ch < 'a' || ch > 'z') && (ch < '0' || ch > '9') && ch != '_') {
                return false;
            }
        }
        return true;
    }

    // --- observability and lifecycle ---------------------------------------------

    /** A copy of the client's counters. It takes each buffer's lock briefly: call it at scrape time, not per ID. */
    public Stats stats() {
        Map<String, Stats.StreamStats> s = new TreeMap<>();
        for (Map.Entry<String, Sequence> e : seqs.entrySet()) {
            s.put(e.getKey(), e.getValue().stream().stats());
        }
        return new Stats(ids.stats(), Map.copyOf(s), endpoints.stats());
    }

    /**
     * Stops the client: calls waiting for a refill throw {@link ClosedException},
     * requests in flight to ticketd are cancelled, and every thread the client
     * started has ended when close returns. Buffered values are dropped (gaps,
     * never repeats). Later calls throw ClosedException. Idempotent.
     */
    @Override
    public void close() {
        synchronized (seqLock) {
            if (closed) {
                return;
            }
            closed = true;
        }
        transport.close();
        pool.shutdownNow();
        scheduler.shutdownNow();
        ids.discard();
        for (Sequence s : seqs.values()) {
            s.stream().discard();
        }
        boolean interrupted = false;
        for (ExecutorService ex : List.of(pool, scheduler)) {
            while (!ex.isTerminated()) {
                try {
                    ex.awaitTermination(1, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    interrupted = true;
                    break;
                }
            }
        }
        for (Thread t : threads) {
            while (!interrupted && t != Thread.currentThread() && t.isAlive()) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    /** The client's settings, as a log line would show them: the token never, only whether there is one. */
    @Override
    public String toString() {
        return "TicketdClient[" + cfg + "]";
    }

    // --- for the buffers and the endpoints -----------------------------------------

    Settings settings() {
        return cfg;
    }

    Clock clock() {
        return clock;
    }

    Transport transport() {
        return transport;
    }

    Endpoints endpoints() {
        return endpoints;
    }

    ExecutorService pool() {
        return pool;
    }

    boolean isClosed() {
        return closed;
    }

    /** Runs task on the client's pool; false once the client is closed. */
    boolean execute(Runnable task) {
        try {
            pool.execute(task);
            return true;
        } catch (RejectedExecutionException closedPool) {
            return false;
        }
    }

    void submit(Runnable task) {
        execute(task);
    }

    /** Probes the endpoints that are down every probeEvery. */
    private void probeTick() {
        if (closed) {
            return;
        }
        execute(endpoints::probeDown);
        clock.schedule(this::probeTick, cfg.probeEvery);
    }

    /** Wakes every buffer (an endpoint rejoined). */
    void wakeAll() {
        ids.signal();
        for (Sequence s : seqs.values()) {
            s.stream().signal();
        }
    }

    /** The System.nanoTime deadline of a wait of maxWait. */
    static long deadline(Duration maxWait) {
        Objects.requireNonNull(maxWait, "maxWait");
        long d = System.nanoTime() + Math.max(0, maxWait.toNanos());
        return d == Stream.NO_DEADLINE ? d + 1 : d;
    }

    /**
     * Builds a {@link TicketdClient}. Every setting but the endpoints has a
     * documented default; {@link #build()} checks them all and throws
     * {@link IllegalArgumentException} naming the first outside its bounds.
     * {@link #toString()} never shows the token.
     */
    public static final class Builder {
        final List<String> endpoints = new ArrayList<>();
        String token;
        SSLContext sslContext;
        Duration callTimeout, maxAge, batchPeriod, probeEvery;
        int minBatch, maxBatch, maxTicketBatch;
        boolean strictlyIncreasing;

        Builder() {}

        /**
         * ticketd's base URLs ({@code http://10.0.0.5:8080}), in order of
         * preference. Required. The client takes values from one endpoint at a
         * time and stays with it until it fails. Replaces earlier ones.
         */
        public Builder endpoints(String... urls) {
            return endpoints(Arrays.asList(urls));
        }

        /** {@link #endpoints(String...)} from a list. */
        public Builder endpoints(List<String> urls) {
            endpoints.clear();
            for (String u : urls) {
                endpoints.add(Objects.requireNonNull(u, "endpoint"));
            }
            return this;
        }

        /**
         * The bearer token ticketd gave this application: sent as
         * {@code Authorization: Bearer TOKEN} with every request for values
         * (the readiness probes need none). Never printed. Default: none.
         */
        public Builder token(String token) {
            this.token = Objects.requireNonNull(token, "token");
            return this;
        }

        /**
         * The TLS context of {@code https://} endpoints: the CAs their
         * certificates must chain to ({@link Tls#trusting(java.nio.file.Path)}
         * makes one from a PEM file), and a client certificate if ticketd
         * wants one. TLS 1.2 or later; the certificate must name the host.
         * Default: the JDK's.
         */
        public Builder sslContext(SSLContext ctx) {
            this.sslContext = Objects.requireNonNull(ctx, "sslContext");
            return this;
        }

        /** The deadline of one request to one endpoint. Default: 500 ms, or maxAge/2 if less. From 1 ms to maxAge. */
        public Builder callTimeout(Duration d) {
            this.callTimeout = Objects.requireNonNull(d, "callTimeout");
            return this;
        }

        /** IDs older than this (since their request was sent) are dropped, not handed out. Default: 1 s. From 10 ms to 1 h. */
        public Builder maxAge(Duration d) {
            this.maxAge = Objects.requireNonNull(d, "maxAge");
            return this;
        }

        /** The fewest IDs one refill asks for. Default: 16. */
        public Builder minBatch(int n) {
            this.minBatch = n;
            return this;
        }

        /** The most IDs one refill asks for: at most every endpoint's -max-batch. Default: 10000; at most 1000000. */
        public Builder maxBatch(int n) {
            this.maxBatch = n;
            return this;
        }

        /** The most values of a sequence one refill asks for: at most -max-ticket-batch. Default: 1000. From 1 to 1000000. */
        public Builder maxTicketBatch(int n) {
            this.maxTicketBatch = n;
            return this;
        }

        /** How long one batch should last (Leaf's step doubles or halves the next). Default: maxAge/10. From 1 ms to maxAge/2. */
        public Builder batchPeriod(Duration d) {
            this.batchPeriod = Objects.requireNonNull(d, "batchPeriod");
            return this;
        }

        /** How often a skipped endpoint is asked {@code GET /readyz}. Default: 250 ms. From 10 ms to 1 min. */
        public Builder probeEvery(Duration d) {
            this.probeEvery = Objects.requireNonNull(d, "probeEvery");
            return this;
        }

        /**
         * Strictly increasing IDs across the whole client, endpoint switches
         * included: every refill asks with {@code after=} the largest ID
         * fetched so far. Keep the ticketd hosts' clocks within a second (a
         * ticketd more than a second behind refuses with 400). Default: off.
         */
        public Builder strictlyIncreasing(boolean on) {
            this.strictlyIncreasing = on;
            return this;
        }

        /** Checks the settings and starts a client (it fetches a first batch of IDs in the background at once). */
        public TicketdClient build() {
            return new TicketdClient(new Settings(this), null, null);
        }

        Settings settings() {
            return new Settings(this);
        }

        @Override
        public String toString() {
            return "TicketdClient.Builder[endpoints=" + endpoints + ", token=" + (token == null || token.isEmpty() ? "" : "[redacted]")
                    + ", sslContext=" + (sslContext != null)
                    + ", callTimeout=" + callTimeout + ", maxAge=" + maxAge + ", minBatch=" + minBatch
                    + ", maxBatch=" + maxBatch + ", maxTicketBatch=" + maxTicketBatch + ", batchPeriod=" + batchPeriod
                    + ", probeEvery=" + probeEvery + ", strictlyIncreasing=" + strictlyIncreasing + "]";
        }
    }
}
