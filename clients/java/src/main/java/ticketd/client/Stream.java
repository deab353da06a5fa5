package ticketd.client;

import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * One buffered source of values: the snowflake IDs, or one named sequence.
 *
 * <p>The buffer is a queue of segments (batches). Callers claim values from
 * the head segment with one atomic increment of its position, without a lock:
 * an index is claimed by exactly one caller, so no value is handed out twice,
 * and indexes are claimed in order, so values are handed out in the order
 * ticketd issued them. An ID's age is checked against the head's expiry on
 * the monotonic clock before the claim. Everything else (moving to the next
 * segment, retiring a spent or expired one, waiting for a refill) happens
 * under the lock, which is never held across I/O. A segment is retired by
 * setting its position past its end in one atomic step: the values it still
 * held are then claimed by nobody (dropped, or counted as served), and a
 * caller that read the old head a moment before finds it spent and takes the
 * slow path.
 *
 * <p>One refill runs at a time (the actor in run, on the client's pool), so
 * batches are appended in the order ticketd issued them. The algorithm is the
 * Go client's: a refill when fewer than one batch is left (the low-water
 * mark, signalled by the caller that claims the index crossing it), batch
 * sizes that double or halve with how long the last batch lasted, a refresh
 * of IDs in use a quarter of maxAge before the freshest expire, endpoints in
 * order with failover, and a pause for a 429's Retry-After.
 */
final class Stream {
    static final long NEVER = Long.MAX_VALUE;
    /** Where a retired segment's position is set: past any end, and far from overflowing. */
    private static final long RETIRED = Long.MAX_VALUE / 2;
    /** No deadline for a caller's wait. */
    static final long NO_DEADLINE = Long.MIN_VALUE;

    private final TicketdClient c;
    private final Settings cfg;
    private final Clock clock;
    final String name; // sequence name; "" for the IDs
    final String path; // /v1/ids or /v1/tickets/NAME
    final boolean ids; // values are snowflake IDs: they age and must increase
    private final boolean strict; // StrictlyIncreasing, IDs only
    private final int minBatch;
    private final int maxBatch;

    /** Values are claimed from here without a lock; Segment.EMPTY when nothing is buffered. */
    private volatile Segment head = Segment.EMPTY;
    /** A value was handed out since the last refill: the refill thread plans a refresh for a buffer in use. */
    private volatile boolean used;

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition arrived = lock.newCondition();
    // Guarded by lock.
    private final ArrayDeque<Segment> queue = new ArrayDeque<>(); // after head, in fetch order
    private long queuedVals;
    private int batch;
    private long lastSent;
    private boolean sentAny;
    private boolean slowFetch; // the last refill took more than callTimeout/4
    private long started; // refills begun: the number of the latest
    private long ended; // the number of the latest refill that ended
    private TicketdException lastErr; // the last refill's error; null after a success
    private boolean paced; // lastErr is a 429: the next refill waits for its Retry-After
    private long maxFetched; // the largest ID fetched: the next refill's after= (strict)
    private long servedRetired, fetched, refills, refillFailures, throttled, droppedByAge, waits;
    private long refillTotal, refillMax;

    // The refill actor: IDLE, RUNNING, or RUNNING with a signal that came meanwhile.
    private static final int IDLE = 0, RUNNING = 1, DIRTY = 2;
    private final AtomicInteger state = new AtomicInteger();
    private final Runnable runTask = this::run;
    private final Runnable signalTask = this::signal;
    // Touched by the actor only (one run at a time).
    private Runnable cancelTimer;
    private boolean pausedSet;
    private long pausedUntil;

    Stream(TicketdClient c, String name, String path, boolean ids, int minBatch, int maxBatch) {
        this.c = c;
        this.cfg = c.settings();
        this.clock = c.clock();
        this.name = name;
        this.path = path;
        this.ids = ids;
        this.strict = ids && cfg.strictlyIncreasing;
        this.minBatch = minBatch;
        this.maxBatch = maxBatch;
        this.batch = minBatch;
    }

    // --- taking values -----------------------------------------------------

    /** One value: the hot path. No lock, no allocation; for IDs one clock reading. */
    long next(long deadline) {
        Segment s = head;
        if (!ids || clock.nanos() - s.expires < 0) {
            long i = (long) Segment.POS.getAndAdd(s, 1L);
            if (i < s.len) {
                // The refill thread plans a refresh for IDs in use: it hears of
                // the first use after a refill. Sequences do not age.
                if (i == s.trigger || ids && !used) {
                    used = true;
                    signal();
                }
                return s.value((int) i);
            }
        }
        return slowNext(deadline);
    }

    /** One value when the head is spent, expired or empty: moves on, or waits for a refill. */
    private long slowNext(long deadline) {
        long waitFor = 0;
        lock.lock();
        try {
            for (;;) {
                advanceLocked(clock.nanos());
                Segment s = head;
                if (s != Segment.EMPTY) {
                    long i = (long) Segment.POS.getAndAdd(s, 1L);
                    if (i < s.len) {
                        long v = s.value((int) i);
                        if (ids && !used || bufferedLocked() < batch) {
                            used = true;
                            signal();
                        }
                        return v;
                    }
                    continue; // claimed by others meanwhile
                }
                waitFor = waitLocked(waitFor, deadline, 0);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Fills dst with values, waiting for refills as needed; throws (with filled()) if it cannot. */
    void fill(long[] dst, long deadline) {
        int filled = 0;
        long waitFor = 0;
        lock.lock();
        try {
            for (;;) {
                long now = clock.nanos();
                advanceLocked(now);
                while (filled < dst.length && head != Segment.EMPTY) {
                    Segment s = head;
                    int want = dst.length - filled;
                    long p = (long) Segment.POS.getAndAdd(s, (long) want);
                    if (p < s.len) {
                        int got = (int) Math.min(want, s.len - p);
                        for (int j = 0; j < got; j++) {
                            dst[filled + j] = s.value((int) p + j);
                        }
                        filled += got;
                    }
                    if (p + want >= s.len) {
                        advanceLocked(now);
                    }
                }
                boolean wake = bufferedLocked() < batch || (ids && filled > 0 && !used);
                if (filled > 0) {
                    used = true;
                }
                if (filled == dst.length) {
                    if (wake) {
                        signal();
                    }
                    return;
                }
                // Nothing (more) buffered: waitLocked asks for a refill unless one is under way.
                waitFor = waitLocked(waitFor, deadline, filled);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Nothing (more) is buffered: throws if the client is closed or a refill
     * that ended while this call waited has failed (callers that wait
     * together share it, and a call that came during a refill waits for that
     * one only, not for the next as well), else asks for a refill if none is
     * under way and waits for the next one to end. Returns the refill number
     * the call waits for.
     */
    private long waitLocked(long waitFor, long deadline, int filled) {
        if (c.isClosed()) {
            throw new ClosedException().withFilled(filled);
        }
        if (waitFor != 0 && ended >= waitFor && lastErr != null && !paced) {
            throw lastErr.forCaller().withFilled(filled);
        }
        if (waitFor == 0) {
            waitFor = ended + 1;
            waits++;
        }
        // A refill under way will end and wake this call: asking for another
        // would only start one nobody waits for once it failed. Under the
        // lock, so that the refill's own dropping of the signals (it began
        // after this call looked) cannot miss it.
        if (started == ended) {
            signal();
        }
        try {
            if (deadline == NO_DEADLINE) {
                arrived.await();
            } else {
                long left = deadline - System.nanoTime();
                if (left <= 0 || arrived.awaitNanos(left) <= 0 && deadline - System.nanoTime() <= 0) {
                    throw new WaitTimeoutException("ticketd: no value of " + path + " within the wait asked for", null)
                            .withFilled(filled);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new WaitTimeoutException("ticketd: interrupted while waiting for a refill of " + path, e)
                    .withFilled(filled);
        }
        return waitFor;
    }

    /** Values that may still be handed out (expired ones count until the next advance). */
    private long bufferedLocked() {
        return head.left() + queuedVals;
    }

    /**
     * Retires the head while it is spent or expired and moves to the next
     * segment. Segments expire in the order they were fetched, so only the
     * head can be expired while a later one is not.
     */
    private boolean advanceLocked(long now) {
        boolean moved = false, expiredAny = false;
        for (;;) {
            Segment s = head;
            if (s != Segment.EMPTY) {
                boolean expired = ids && now - s.expires >= 0;
                if (!expired && s.pos < s.len) {
                    break;
                }
                expiredAny |= expired;
                retireLocked(s, expired);
            }
            Segment next = queue.poll();
            if (next == null) {
                head = Segment.EMPTY;
                break;
            }
            queuedVals -= next.len;
            head = next;
            moved = true;
        }
        if (moved) {
            retriggerLocked();
        }
        return expiredAny;
    }

    /** Claims what is left of s in one step: values nobody can take any more. */
    private void retireLocked(Segment s, boolean expired) {
        long p = (long) Segment.POS.getAndSet(s, RETIRED);
        int taken = (int) Math.min(p, s.len);
        servedRetired += taken;
        if (expired) {
            droppedByAge += s.len - taken;
        }
    }

    /**
     * Sets the index of the head whose taker finds the buffer below its
     * low-water mark (one batch), and asks for a refill at once if it is
     * below already.
     */
    private void retriggerLocked() {
        Segment s = head;
        if (s == Segment.EMPTY) {
            return;
        }
        long t = s.len + queuedVals - batch; // taking index t leaves fewer than batch
        s.trigger = t;
        if (s.pos > t) {
            signal();
        }
    }

    // --- refilling ---------------------------------------------------------

    /** Asks the refill actor to look at the buffer. Never blocks; allocates nothing unless the actor was idle. */
    void signal() {
        for (;;) {
            int st = state.get();
            if (st == IDLE) {
                if (state.compareAndSet(IDLE, RUNNING)) {
                    if (!c.execute(runTask)) {
                        state.set(IDLE); // closed
                    }
                    return;
                }
            } else if (st == RUNNING) {
                if (state.compareAndSet(RUNNING, DIRTY)) {
                    return;
                }
            } else {
                return;
            }
        }
    }

    /** The actor: keeps the buffer above its mark and, for IDs in use, fresh. */
    private void run() {
        for (;;) {
            state.set(RUNNING);
            long wait = work();
            if (cancelTimer != null) {
                cancelTimer.run();
                cancelTimer = null;
            }
            if (wait != NEVER && !c.isClosed()) {
                cancelTimer = clock.schedule(signalTask, wait);
            }
            if (state.compareAndSet(RUNNING, IDLE)) {
                return;
            }
        }
    }

    /** Refills while needed; returns how long until the next look (NEVER: when asked). */
    private long work() {
        for (;;) {
            if (c.isClosed()) {
                return NEVER;
            }
            if (pausedSet) {
                // Over a token's quota: asking again before the Retry-After
                // would only be refused again; callers keep waiting.
                long left = pausedUntil - clock.nanos();
                if (left > 0) {
                    return left;
                }
                pausedSet = false;
            }
            long wait = plan();
            if (wait != 0) {
                return wait;
            }
            TicketdException err = refill();
            if (err == null) {
                continue;
            }
            long pause = pause(err);
            if (pause > 0) {
                pausedSet = true;
                pausedUntil = clock.nanos() + pause;
                continue;
            }
            return NEVER; // failed: try again only when asked (a caller, a rejoin)
        }
    }

    /**
     * 0 when a refill is needed now; otherwise how long until the freshest IDs
     * come within a quarter of maxAge of expiring (a buffer in use is
     * refreshed then, so that a slow caller does not find only stale IDs), or
     * NEVER.
     */
    private long plan() {
        lock.lock();
        try {
            long now = clock.nanos();
            advanceLocked(now);
            if (bufferedLocked() < batch) {
                return 0;
            }
            if (!ids || !used || head == Segment.EMPTY) {
                return NEVER;
            }
            Segment newest = queue.isEmpty() ? head : queue.peekLast();
            long refreshAt = newest.expires - cfg.maxAge / 4;
            long left = refreshAt - now;
            return left <= 0 ? 0 : left;
        } finally {
            lock.unlock();
        }
    }

    /** Fetches one batch from the first endpoint that gives it; returns null or the refill's error. */
    private TicketdException refill() {
        long attempt;
        int n;
        String p;
        lock.lock();
        try {
            attempt = ++started;
            // The signals that came before now are this refill's to answer:
            // callers waiting get its outcome, whatever it is.
            state.compareAndSet(DIRTY, RUNNING);
            long now = clock.nanos();
            // Leaf's step: a batch that lasted less than batchPeriod doubles,
            // one that lasted more than twice as long halves. A batch that
            // took more than a quarter of the call deadline to fetch halves
            // too: one that cannot arrive within the deadline never would.
            if (sentAny) {
                long lasted = now - lastSent;
                if (slowFetch) {
                    batch = Math.max(batch / 2, minBatch);
                } else if (lasted < cfg.batchPeriod) {
                    batch = (int) Math.min(2L * batch, maxBatch);
                } else if (lasted > 2 * cfg.batchPeriod) {
                    batch = Math.max(batch / 2, minBatch);
                }
                retriggerLocked();
            }
            n = batch;
            p = strict && maxFetched > 0 ? path + "?after=" + maxFetched : path;
        } finally {
            lock.unlock();
        }

        // First the endpoints that are up, each with callTimeout. If none is
        // up, or all of those fail, every endpoint, each with as long as an
        // answer can be of use (maxAge): a slow endpoint is not a dead one.
        boolean[] lastResort = new boolean[1];
        int[] order = c.endpoints().pick(lastResort);
        Exception err = null;
        for (int pass = 0; pass < 2; pass++) {
            long timeout = lastResort[0] ? cfg.maxAge : cfg.callTimeout;
            for (int i : order) {
                long sent = clock.nanos();
                try {
                    byte[] body = fetch(i, timeout, p, n);
                    appendBatch(body, sent, attempt);
                    return null;
                } catch (Exception e) {
                    err = e;
                }
                if (c.isClosed()) {
                    return new ClosedException();
                }
                if (err instanceof RejectedException r && r.status() != 429) {
                    break; // every ticketd would refuse it (a quota is each ticketd's own)
                }
            }
            if (lastResort[0] || err instanceof RejectedException) {
                break;
            }
            order = c.endpoints().all();
            lastResort[0] = true;
        }
        TicketdException te = err instanceof RejectedException r ? r : c.endpoints().unavailable();
        lock.lock();
        try {
            refillFailures++;
            lastErr = te;
            // Over a token's quota the refill is paused, not failed: callers
            // keep waiting for the refill after Retry-After.
            paced = pause(te) > 0;
            if (paced) {
                throttled++;
            }
            // Perhaps too big to arrive in time, or above the endpoint's
            // -max-batch (a 400): ask for less next time.
            batch = Math.max(batch / 2, minBatch);
            retriggerLocked();
            ended = attempt;
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
        return te;
    }

    /** A 429's pause: its Retry-After, or a second; 0 for any other error. */
    private static long pause(Exception err) {
        if (err instanceof RejectedException r && r.status() == 429) {
            return r.retryAfter().isZero() ? TimeUnit.SECONDS.toNanos(1) : r.retryAfter().toNanos();
        }
        return 0;
    }

    /** Asks endpoint i for n values within timeout, checks them, and records the outcome. */
    private byte[] fetch(int i, long timeout, String p, int n) throws Exception {
        String base = c.endpoints().base(i);
        try {
            byte[] body = c.transport().get(base, p, n, timeout);
            check(body);
            c.endpoints().succeeded(i);
            return body;
        } catch (Exception e) {
            if (!c.isClosed()) {
                c.endpoints().failed(i, new FetchException(base + path, e), Endpoints.skips(ids, e));
            }
            throw e;
        }
    }

    /**
     * Refuses a batch the client could not hand out as promised: snowflake
     * IDs are positive and a batch increases; strictly increasing, its first
     * ID is above the after= asked for.
     */
    private void check(byte[] body) throws BadAnswerException {
        if (!ids) {
            return;
        }
        Segment s = new Segment(body, 0);
        long prev = 0;
        for (int i = 0; i < s.len; i++) {
            long v = s.value(i);
            if (v <= 0) {
                throw new BadAnswerException("ID " + Long.toUnsignedString(v) + " is not a positive int64");
            }
            if (i > 0 && v <= prev) {
                throw new BadAnswerException("ID " + v + " after " + prev + ": a batch must increase");
            }
            prev = v;
        }
        if (strict && s.len > 0) {
            long after;
            lock.lock();
            try {
                after = maxFetched;
            } finally {
                lock.unlock();
            }
            if (s.value(0) <= after) {
                throw new BadAnswerException("ID " + s.value(0) + " asked for after " + after);
            }
        }
    }

    /** Puts a batch asked for at sent at the end of the buffer, and wakes the callers waiting. */
    private void appendBatch(byte[] body, long sent, long attempt) {
        long now = clock.nanos();
        long took = now - sent;
        lock.lock();
        try {
            Segment seg = new Segment(body, ids ? sent + cfg.maxAge : Long.MAX_VALUE);
            if (seg.len == 0) {
                return; // a batch of 0 is never asked for
            }
            queue.add(seg);
            queuedVals += seg.len;
            if (ids) {
                maxFetched = Math.max(maxFetched, seg.value(seg.len - 1));
            }
            fetched += seg.len;
            refills++;
            refillTotal += took;
            refillMax = Math.max(refillMax, took);
            lastSent = sent;
            sentAny = true;
            used = false;
            slowFetch = took > cfg.callTimeout / 4;
            lastErr = null;
            paced = false;
            advanceLocked(now);
            retriggerLocked();
            ended = attempt;
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Empties the buffer at close (gaps, never repeats) and wakes every caller waiting. */
    void discard() {
        lock.lock();
        try {
            if (head != Segment.EMPTY) {
                Segment.POS.getAndSet(head, RETIRED);
            }
            head = Segment.EMPTY;
            queue.clear();
            queuedVals = 0;
            arrived.signalAll();
        } finally {
            lock.unlock();
        }
    }

    Stats.StreamStats stats() {
        lock.lock();
        try {
            // Buffered counts only values that may still be handed out;
            // dropping the others may take the buffer below its mark.
            if (advanceLocked(clock.nanos()) && bufferedLocked() < batch) {
                signal();
            }
            Segment s = head;
            long served = servedRetired + (s == Segment.EMPTY ? 0 : Math.min(s.pos, s.len));
            return new Stats.StreamStats(served, fetched, bufferedLocked(), batch, refills, refillFailures, throttled,
                    Duration.ofNanos(refillTotal), Duration.ofNanos(refillMax), droppedByAge, waits,
                    lastErr == null ? "" : lastErr.getMessage());
        } finally {
            lock.unlock();
        }
    }

    /** A failed request, as the endpoint's last error: the URL and what went wrong. */
    static final class FetchException extends Exception {
        private static final long serialVersionUID = 1L;

        FetchException(String url, Exception cause) {
            super(url + ": " + describe(cause), cause);
        }

        static String describe(Exception e) {
            String m = e.getMessage();
            if (e instanceof TicketdException) {
                return m;
            }
            if (m == null || m.isBlank()) {
                // java.net.http gives a refused connection no message.
                return e instanceof ConnectException ? "connection refused" : e.getClass().getSimpleName();
            }
            return e.getClass().getSimpleName() + ": " + m;
        }
    }
}
