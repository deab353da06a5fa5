package ticketd.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Arrays;
import java.util.UUID;

/**
 * The Java client measured against ticketd, beside UUID.randomUUID and a
 * plain HTTP call in the same JVM, the way JMH measures (warm-up iterations,
 * then measured ones, the result consumed so the JIT cannot drop the work),
 * with the JDK alone. Prints one "name value" line per figure:
 *
 * <pre>
 *   clients_java_next_ns            one next() from a warm buffer (the fastest of the iterations)
 *   clients_java_uuid_ns            one UUID.randomUUID()
 *   clients_java_http_ns            one GET /v1/id with java.net.http.HttpClient, kept alive
 *   clients_java_seq_next_ns        one Sequence.next() from a warm buffer
 *   clients_java_seq_hot_m_per_s    1000 / clients_java_seq_next_ns: what the hot path hands out per second, from one thread
 *   clients_java_seq_cosid_ratio    that against CosId's published 127 M/s for its SegmentChainId
 *   clients_java_*_cpu_ns           next, UUID and Sequence.next in the thread's CPU time
 *   clients_java_jdk                the JDK's feature release
 *   clients_java_seq_sustained_per_s  Sequence.next() from one thread for -seq-d seconds, refills from ticketd included
 *   clients_java_sustained_ids_per_s  next() from one thread for -d seconds, refills included
 * </pre>
 *
 * Each per-call figure also comes as CPU time (the _cpu_ns rows: this thread's
 * CPU time, ThreadMXBean, over the same bursts), which a machine shared with
 * other work disturbs less than the wall clock.
 *
 * A warm buffer: IDs are taken in bursts smaller than what the client keeps
 * buffered, and only the bursts are timed (the refill between two bursts is
 * not), as for the Go client's client_next_ns: the cost a caller below
 * ticketd's capacity pays.
 *
 * Arguments: -url BASE -sequence NAME [-d SECONDS] [-seq-d SECONDS] [-iterations N]
 * [-max-ticket-batch N] (at most ticketd's -max-ticket-batch; the bursts of
 * sequence values are a tenth of it).
 */
public final class Bench {
    static volatile long sink; // results go here: the JIT cannot drop what it computes
    static final java.lang.management.ThreadMXBean CPU = java.lang.management.ManagementFactory.getThreadMXBean();
    /** The CPU ns per call of the last burstsNs or uuidNs. */
    static double lastCpuNs;

    public static void main(String[] args) throws Exception {
        String url = null, seq = null;
        double d = 8, seqD = 10;
        int iterations = 3;
        int maxTicketBatch = TicketdClient.DEFAULT_MAX_TICKET_BATCH;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "-url" -> url = args[++i];
                case "-sequence" -> seq = args[++i];
                case "-d" -> d = Double.parseDouble(args[++i]);
                case "-seq-d" -> seqD = Double.parseDouble(args[++i]);
                case "-iterations" -> iterations = Integer.parseInt(args[++i]);
                case "-max-ticket-batch" -> maxTicketBatch = Integer.parseInt(args[++i]);
                default -> throw new IllegalArgumentException("unknown argument " + args[i]);
            }
        }
        if (url == null || seq == null) {
            throw new IllegalArgumentException("usage: Bench -url BASE -sequence NAME [-d S] [-seq-d S] [-iterations N]");
        }
        try (TicketdClient c = TicketdClient.builder().endpoints(url).maxTicketBatch(maxTicketBatch).build()) {
            Sequence s = c.sequence(seq);
            seqBurst = Math.max(1, maxTicketBatch / 2);
            // Warm-up: the JIT compiles the paths, the batches grow.
            for (int w = 0; w < 3; w++) {
                burstsNs(c, null, 200);
                burstsNs(c, s, 200);
                uuidNs(200);
            }
            double[] next = new double[iterations], uuid = new double[iterations], seqNs = new double[iterations];
            double[] nextCpu = new double[iterations], uuidCpu = new double[iterations], seqCpu = new double[iterations];
            for (int it = 0; it < iterations; it++) { // interleaved, so that a noisy moment hits all three
                next[it] = burstsNs(c, null, 1000);
                nextCpu[it] = lastCpuNs;
                seqNs[it] = burstsNs(c, s, 1000);
                seqCpu[it] = lastCpuNs;
                uuid[it] = uuidNs(1000);
                uuidCpu[it] = lastCpuNs;
            }
            double nextNs = least(next), seqNext = least(seqNs);
            System.out.printf("clients_java_next_ns %.1f%n", nextNs);
            System.out.printf("clients_java_uuid_ns %.1f%n", least(uuid));
            System.out.printf("clients_java_seq_next_ns %.1f%n", seqNext);
            System.out.printf("clients_java_seq_hot_m_per_s %.1f%n", 1000 / seqNext);
            // CosId's published SegmentChainId figure: 127 M IDs/s from one thread.
            System.out.printf("clients_java_seq_cosid_ratio %.2f%n", 1000 / seqNext / 127);
            System.out.printf("clients_java_next_cpu_ns %.1f%n", least(nextCpu));
            System.out.printf("clients_java_uuid_cpu_ns %.1f%n", least(uuidCpu));
            System.out.printf("clients_java_seq_next_cpu_ns %.1f%n", least(seqCpu));
            System.out.printf("clients_java_http_ns %.0f%n", httpNs(url, 2000));
            System.out.printf("clients_java_seq_sustained_per_s %.0f%n", sustained(c, s, seqD));
            System.out.printf("clients_java_sustained_ids_per_s %.0f%n", sustained(c, null, d));
            System.out.printf("clients_java_jdk %d%n", Runtime.version().feature());
        }
        System.err.println("sink " + (sink & 1));
    }

    /** IDs per timed burst: half of the largest batch (10000). */
    static final int BURST = 5000;
    /** Sequence values per timed burst: half of the largest batch. */
    static int seqBurst = 500;

    /** Mean ns of one value over bursts for about ms, each burst from a buffer holding more. */
    static double burstsNs(TicketdClient c, Sequence s, long ms) throws InterruptedException {
        int burst = s == null ? BURST : seqBurst;
        long timed = 0, cpu = 0, n = 0, x = 0;
        long end = System.nanoTime() + ms * 1_000_000;
        while (System.nanoTime() < end) {
            warm(c, s, burst);
            long c0 = CPU.getCurrentThreadCpuTime();
            long t0 = System.nanoTime();
            if (s == null) {
                for (int i = 0; i < burst; i++) {
                    x ^= c.next();
                }
            } else {
                for (int i = 0; i < burst; i++) {
                    x ^= s.next();
                }
            }
            timed += System.nanoTime() - t0;
            cpu += CPU.getCurrentThreadCpuTime() - c0;
            n += burst;
        }
        sink ^= x;
        lastCpuNs = (double) cpu / n;
        return (double) timed / n;
    }

    /**
     * Waits until the buffer holds more than two bursts, in batches of two
     * bursts or more: no timed call waits for ticketd. Taking values fast (as
     * a caller would) makes the batches grow and a refill start.
     */
    static void warm(TicketdClient c, Sequence s, int burst) throws InterruptedException {
        long end = System.nanoTime() + 60_000_000_000L;
        while (System.nanoTime() < end) {
            Stats st = c.stats();
            Stats.StreamStats b = s == null ? st.ids() : st.sequences().get(s.name());
            if (b != null && b.buffered() > 2L * burst && b.batch() >= 2 * burst) {
                return;
            }
            long[] buf = new long[(int) Math.max(1, Math.min(burst, b == null ? 1 : b.buffered()))];
            if (s == null) {
                c.fill(buf);
            } else {
                s.fill(buf);
            }
            Thread.sleep(0, 100_000);
        }
        throw new IllegalStateException("no warm buffer within a minute: " + c.stats());
    }

    static double uuidNs(long ms) {
        long n = 0, x = 0;
        long c0 = CPU.getCurrentThreadCpuTime();
        long t0 = System.nanoTime(), end = t0 + ms * 1_000_000;
        while (System.nanoTime() < end) {
            for (int i = 0; i < 1000; i++) {
                x ^= UUID.randomUUID().getLeastSignificantBits();
            }
            n += 1000;
        }
        sink ^= x;
        lastCpuNs = (double) (CPU.getCurrentThreadCpuTime() - c0) / n;
        return (double) (System.nanoTime() - t0) / n;
    }

    /** Mean ns of one plain GET /v1/id (text) over a kept-alive connection, after a warm-up. */
    static double httpNs(String url, long ms) throws Exception {
        HttpClient hc = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest req = HttpRequest.newBuilder(URI.create(url + "/v1/id")).timeout(Duration.ofSeconds(5)).build();
        long x = 0;
        for (int i = 0; i < 2000; i++) {
            x ^= Long.parseLong(hc.send(req, HttpResponse.BodyHandlers.ofString()).body().trim());
        }
        long n = 0, t0 = System.nanoTime(), end = t0 + ms * 1_000_000;
        while (System.nanoTime() < end) {
            HttpResponse<String> r = hc.send(req, HttpResponse.BodyHandlers.ofString());
            if (r.statusCode() != 200) {
                throw new IllegalStateException("GET /v1/id: " + r.statusCode() + " " + r.body());
            }
            x ^= Long.parseLong(r.body().trim());
            n++;
        }
        sink ^= x;
        return (double) (System.nanoTime() - t0) / n;
    }

    /** Values per second one thread takes for seconds, waiting on refills when it outruns them. */
    static double sustained(TicketdClient c, Sequence s, double seconds) {
        long n = 0, x = 0;
        long t0 = System.nanoTime(), end = t0 + (long) (seconds * 1e9);
        while (System.nanoTime() < end) {
            if (s == null) {
                for (int i = 0; i < 1024; i++) {
                    x ^= c.next();
                }
            } else {
                for (int i = 0; i < 1024; i++) {
                    x ^= s.next();
                }
            }
            n += 1024;
        }
        sink ^= x;
        return n / ((System.nanoTime() - t0) / 1e9);
    }

    /** The fastest of the iterations, as bench/clients.sh takes for every client. */
    static double least(double[] v) {
        return Arrays.stream(v).min().orElseThrow();
    }
}
