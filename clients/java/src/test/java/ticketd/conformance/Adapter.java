package ticketd.conformance;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import ticketd.client.ClosedException;
import ticketd.client.RejectedException;
import ticketd.client.Stats;
import ticketd.client.TicketdClient;
import ticketd.client.Tls;
import ticketd.client.UnavailableException;
import ticketd.client.WaitTimeoutException;

/**
 * The Java client's conformance adapter: speaks the protocol of
 * clients/conformance/PROTOCOL.md on standard input and output, creating
 * clients and calling them as the driver says. It uses the client's public
 * API only (it is compiled against the jar alone), as an application would.
 */
public final class Adapter {
    private final Map<String, TicketdClient> clients = new HashMap<>();
    private final Map<String, TicketdClient.Builder> builders = new HashMap<>();
    private final Map<String, Job> jobs = new HashMap<>();

    public static void main(String[] args) throws Exception {
        Adapter a = new Adapter();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
        for (String line; (line = in.readLine()) != null;) {
            if (line.isBlank()) {
                continue;
            }
            Object ans;
            try {
                ans = a.handle(MiniJson.object(line));
            } catch (RuntimeException e) {
                ans = fail("protocol", e.toString());
            }
            out.println(MiniJson.write(ans));
            out.flush();
        }
        for (Job j : a.jobs.values()) {
            j.thread.join();
        }
        for (TicketdClient c : a.clients.values()) {
            c.close();
        }
    }

    private Object handle(Map<String, Object> r) throws Exception {
        String op = str(r, "op");
        switch (op) {
            case "hello": {
                Map<String, Object> m = ok();
                m.put("language", "java");
                m.put("resources_exact", true); // close joins every thread it started
                m.put("client", "ticketd-client " + version() + " (Java " + Runtime.version() + ")");
                return m;
            }
            case "new": {
                String name = str(r, "client");
                if (name.isEmpty() || clients.containsKey(name)) {
                    return fail("protocol", "client \"" + name + "\": want a new name");
                }
                try {
                    TicketdClient.Builder b = builder(obj(r, "config"));
                    clients.put(name, b.build());
                    builders.put(name, b);
                } catch (IllegalArgumentException | java.io.IOException | java.security.GeneralSecurityException e) {
                    return fail("bad_config", e.getMessage());
                }
                return ok();
            }
            case "next":
            case "ticket": {
                TicketdClient c = clients.get(str(r, "client"));
                if (c == null) {
                    return fail("protocol", "no client \"" + str(r, "client") + "\"");
                }
                String jobName = str(r, "job");
                if (!jobName.isEmpty() && jobs.containsKey(jobName)) {
                    return fail("protocol", "job \"" + jobName + "\" twice");
                }
                Job j = new Job(c, r);
                j.thread.start();
                if (jobName.isEmpty()) {
                    j.thread.join();
                    return j.answer;
                }
                jobs.put(jobName, j);
                return ok();
            }
            case "progress":
            case "wait": {
                Job j = jobs.get(str(r, "job"));
                if (j == null) {
                    return fail("protocol", "no job \"" + str(r, "job") + "\"");
                }
                if (op.equals("progress")) {
                    Map<String, Object> m = ok();
                    m.put("calls", j.calls.get());
                    return m;
                }
                j.thread.join();
                return j.answer;
            }
            case "close": {
                TicketdClient c = clients.get(str(r, "client"));
                if (c == null) {
                    return fail("protocol", "no client \"" + str(r, "client") + "\"");
                }
                c.close();
                Map<String, Object> m = ok();
                m.put("count", Thread.getAllStackTraces().size());
                return m;
            }
            case "resources": {
                // Live threads.
                Map<String, Object> m = ok();
                m.put("count", Thread.getAllStackTraces().size());
                return m;
            }
            case "stats":
            case "print": {
                TicketdClient c = clients.get(str(r, "client"));
                if (c == null) {
                    return fail("protocol", "no client \"" + str(r, "client") + "\"");
                }
                Map<String, Object> m = ok();
                if (op.equals("stats")) {
                    m.put("stats", statsOf(c.stats()));
                } else {
                    TicketdClient.Builder b = builders.get(str(r, "client"));
                    m.put("printed", List.of(c.toString(), String.valueOf(c), String.format("%s", c), b.toString()));
                }
                return m;
            }
            default:
                return fail("protocol", "unknown op \"" + op + "\"");
        }
    }

    /** The client's stats in the protocol's terms. */
    private static Map<String, Object> statsOf(Stats st) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ids", streamOf(st.ids()));
        Map<String, Object> seqs = new LinkedHashMap<>();
        st.sequences().forEach((name, s) -> seqs.put(name, streamOf(s)));
        m.put("sequences", seqs);
        List<Object> eps = new ArrayList<>();
        for (Stats.EndpointStats e : st.endpoints()) {
            Map<String, Object> o = new LinkedHashMap<>();
            o.put("url", e.url());
            o.put("up", e.up());
            o.put("current", e.current());
            o.put("requests", e.requests());
            o.put("failures", e.failures());
            o.put("rejected", e.rejected());
            o.put("probes", e.probes());
            o.put("last_error", e.lastError());
            o.put("last_probe_error", e.lastProbeError());
            eps.add(o);
        }
        m.put("endpoints", eps);
        return m;
    }

    private static Map<String, Object> streamOf(Stats.StreamStats s) {
        Map<String, Object> o = new LinkedHashMap<>();
        o.put("served", s.served());
        o.put("fetched", s.fetched());
        o.put("buffered", s.buffered());
        o.put("batch", s.batch());
        o.put("refills", s.refills());
        o.put("refill_failures", s.refillFailures());
        o.put("throttled", s.throttled());
        o.put("refill_latency_total_ms", s.refillLatencyTotal().toNanos() / 1e6);
        o.put("refill_latency_max_ms", s.refillLatencyMax().toNanos() / 1e6);
        o.put("dropped_by_age", s.droppedByAge());
        o.put("waits", s.waits());
        o.put("last_error", s.lastError());
        return o;
    }

    private static TicketdClient.Builder builder(Map<String, Object> cfg) throws Exception {
        TicketdClient.Builder b = TicketdClient.builder();
        List<String> eps = new ArrayList<>();
        Object e = cfg.get("endpoints");
        if (e instanceof List<?> l) {
            for (Object o : l) {
                eps.add(String.valueOf(o));
            }
        }
        b.endpoints(eps);
        if (!str(cfg, "token").isEmpty()) {
            b.token(str(cfg, "token"));
        }
        if (!str(cfg, "ca_file").isEmpty()) {
            b.sslContext(Tls.trusting(Path.of(str(cfg, "ca_file"))));
        }
        if (num(cfg, "max_age_ms") != 0) {
            b.maxAge(Duration.ofMillis(num(cfg, "max_age_ms")));
        }
        if (num(cfg, "call_timeout_ms") != 0) {
            b.callTimeout(Duration.ofMillis(num(cfg, "call_timeout_ms")));
        }
        b.minBatch((int) num(cfg, "min_batch")).maxBatch((int) num(cfg, "max_batch"));
        b.maxTicketBatch((int) num(cfg, "max_ticket_batch"));
        if (num(cfg, "batch_period_ms") != 0) {
            b.batchPeriod(Duration.ofMillis(num(cfg, "batch_period_ms")));
        }
        if (num(cfg, "probe_every_ms") != 0) {
            b.probeEvery(Duration.ofMillis(num(cfg, "probe_every_ms")));
        }
        b.strictlyIncreasing(Boolean.TRUE.equals(cfg.get("strictly_increasing")));
        return b;
    }

    /** A next or ticket request: its threads, run by one coordinating thread. */
    private static final class Job {
        final AtomicLong calls = new AtomicLong();
        final Thread thread;
        volatile Map<String, Object> answer;

        Job(TicketdClient c, Map<String, Object> r) {
            thread = new Thread(() -> answer = run(c, r), "conformance-job");
        }

        private Map<String, Object> run(TicketdClient c, Map<String, Object> r) {
            boolean ids = str(r, "op").equals("next");
            String name = str(r, "name");
            int threads = (int) num(r, "threads"), count = (int) num(r, "count");
            long timeoutMs = num(r, "timeout_ms") > 0 ? num(r, "timeout_ms") : 10_000;
            Duration timeout = Duration.ofMillis(timeoutMs);
            int pauseEvery = (int) num(r, "pause_every");
            long pauseMs = num(r, "pause_ms");
            boolean timed = Boolean.TRUE.equals(r.get("timed"));
            List<Map<String, Object>> results = new ArrayList<>();
            List<Thread> ts = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                List<Object> values = new ArrayList<>(count), times = new ArrayList<>(), errors = new ArrayList<>();
                Map<String, Object> th = new LinkedHashMap<>();
                th.put("values", values);
                if (timed) {
                    th.put("times", times);
                }
                th.put("errors", errors);
                results.add(th);
                ts.add(new Thread(() -> {
                    for (int k = 1; k <= count; k++) {
                        long before = micros();
                        try {
                            long v = ids ? c.next(timeout) : c.ticket(name, timeout);
                            long after = micros();
                            values.add(Long.toUnsignedString(v));
                            if (timed) {
                                times.add(List.of(before, after));
                            }
                        } catch (RuntimeException e) {
                            errors.add(errorOf(e));
                        }
                        calls.incrementAndGet();
                        if (pauseEvery > 0 && k % pauseEvery == 0) {
                            try {
                                Thread.sleep(pauseMs);
                            } catch (InterruptedException ie) {
                                return;
                            }
                        }
                    }
                }, "conformance-caller-" + t));
            }
            ts.forEach(Thread::start);
            for (Thread t : ts) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            Map<String, Object> ans = ok();
            ans.put("threads", results);
            return ans;
        }
    }

    /** The protocol's error object of a client exception, by its type. */
    static Map<String, Object> errorOf(RuntimeException e) {
        String kind = "bad_answer";
        int status = 0;
        if (e instanceof ClosedException) {
            kind = "closed";
        } else if (e instanceof RejectedException r) {
            kind = "rejected";
            status = r.status();
        } else if (e instanceof UnavailableException) {
            kind = "unavailable";
        } else if (e instanceof WaitTimeoutException) {
            kind = "timeout";
        } else if (e instanceof IllegalArgumentException) {
            kind = "bad_name"; // the only argument a call takes that ticketd could refuse
        }
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", kind);
        m.put("message", String.valueOf(e.getMessage()));
        m.put("status", status);
        return m;
    }

    private static long micros() {
        Instant now = Instant.now();
        return now.getEpochSecond() * 1_000_000L + now.getNano() / 1000;
    }

    private static String version() {
        String v = TicketdClient.class.getPackage().getImplementationVersion();
        return v == null ? "(unversioned)" : v;
    }

    private static Map<String, Object> ok() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", true);
        return m;
    }

    private static Map<String, Object> fail(String kind, String message) {
        Map<String, Object> err = new LinkedHashMap<>();
        err.put("kind", kind);
        err.put("message", message);
        err.put("status", 0);
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("ok", false);
        m.put("error", err);
        return m;
    }

    private static String str(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof String s ? s : "";
    }

    private static long num(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Number n ? n.longValue() : 0;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> obj(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof Map<?, ?> o ? (Map<String, Object>) o : Map.of();
    }
}
