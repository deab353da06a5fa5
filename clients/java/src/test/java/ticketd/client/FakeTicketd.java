package ticketd.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.IntFunction;

/**
 * An HTTP server that answers like ticketd, for the unit tests: /v1/ids and
 * /v1/tickets/NAME in the binary format (honouring after=), /readyz, with
 * knobs for failures: a status, a delay, a token, a body of its own.
 */
final class FakeTicketd implements AutoCloseable {
    /** One request it saw. */
    record Req(String path, Map<String, String> query, String auth, long atNanos) {
        int n() {
            return Integer.parseInt(query.getOrDefault("n", "1"));
        }
    }

    static {
        // The JDK's server writes headers and body apart: without TCP_NODELAY
        // every answer waits for the client's delayed ACK (tens of ms).
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    private final HttpServer srv;
    private final ExecutorService exec = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "fake-ticketd");
        t.setDaemon(true);
        return t;
    });
    final String url;

    volatile int status = 200; // of value requests
    volatile String retryAfter; // header of a non-200 answer
    volatile int statusTimes = Integer.MAX_VALUE; // status applies to this many value requests, then 200
    volatile String statusOnly; // when set, status applies only to paths that start with it
    volatile long delayMs; // before answering a value request
    volatile boolean ready = true; // /readyz 200 or 503
    volatile String token; // required as Bearer when set
    volatile IntFunction<byte[]> body; // a body of its own for n values
    volatile String contentType = "application/octet-stream";
    final Set<String> sequences = java.util.concurrent.ConcurrentHashMap.newKeySet();

    private long nextId;
    private long nextTicket = 1;
    private final List<Req> reqs = new ArrayList<>();

    FakeTicketd(long firstId) throws IOException {
        this(firstId, null);
    }

    FakeTicketd(long firstId, javax.net.ssl.SSLContext tls) throws IOException {
        nextId = firstId;
        sequences.add("orders");
        InetSocketAddress addr = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
        if (tls != null) {
            HttpsServer s = HttpsServer.create(addr, 0);
            s.setHttpsConfigurator(new com.sun.net.httpserver.HttpsConfigurator(tls));
            srv = s;
        } else {
            srv = HttpServer.create(addr, 0);
        }
        srv.setExecutor(exec);
        srv.createContext("/", this::handle);
        srv.start();
        url = (tls != null ? "https" : "http") + "://127.0.0.1:" + srv.getAddress().getPort();
    }

    synchronized List<Req> requests() {
        return new ArrayList<>(reqs);
    }

    /** The value requests (not /readyz) it saw. */
    synchronized List<Req> valueRequests() {
        List<Req> out = new ArrayList<>();
        for (Req r : reqs) {
            if (!r.path.equals("/readyz")) {
                out.add(r);
            }
        }
        return out;
    }

    synchronized long peekNextId() {
        return nextId;
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            URI u = ex.getRequestURI();
            Map<String, String> q = new HashMap<>();
            if (u.getRawQuery() != null) {
                for (String kv : u.getRawQuery().split("&")) {
                    int eq = kv.indexOf('=');
                    q.put(eq < 0 ? kv : kv.substring(0, eq), eq < 0 ? "" : kv.substring(eq + 1));
                }
            }
            String path = u.getRawPath();
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            synchronized (this) {
                reqs.add(new Req(path, q, auth, System.nanoTime()));
            }
            if (path.equals("/readyz")) {
                send(ex, ready ? 200 : 503, "text/plain", (ready ? "ready" : "not ready").getBytes());
                return;
            }
            if (token != null && !("Bearer " + token).equals(auth)) {
                json(ex, auth == null ? 401 : 403, "no valid token");
                return;
            }
            if (delayMs > 0) {
                try {
                    Thread.sleep(delayMs);
                } catch (InterruptedException e) {
                    return;
                }
            }
            int st = status;
            String only = statusOnly;
            if (only != null && !path.startsWith(only)) {
                st = 200;
            }
            if (st != 200) {
                synchronized (this) {
                    if (statusTimes > 0) {
                        statusTimes--;
                    } else {
                        st = 200;
                    }
                }
            }
            if (st != 200) {
                if (retryAfter != null) {
                    ex.getResponseHeaders().set("Retry-After", retryAfter);
                }
                json(ex, st, "fake failure " + st);
                return;
            }
            int n = Integer.parseInt(q.getOrDefault("n", "1"));
            if (!"binary".equals(q.get("format"))) {
                json(ex, 400, "want format=binary");
                return;
            }
            ByteBuffer b = ByteBuffer.allocate(8 * n);
            if (path.equals("/v1/ids")) {
                synchronized (this) {
                    if (q.containsKey("after")) {
                        nextId = Math.max(nextId, Long.parseLong(q.get("after")) + 1);
                    }
                    for (int i = 0; i < n; i++) {
                        b.putLong(nextId++);
                    }
                }
            } else if (path.startsWith("/v1/tickets/")) {
                String name = path.substring("/v1/tickets/".length());
                if (!sequences.contains(name)) {
                    json(ex, 404, "unknown sequence \"" + name + "\"");
                    return;
                }
                synchronized (this) {
                    for (int i = 0; i < n; i++) {
                        b.putLong(nextTicket++);
                    }
                }
            } else {
                json(ex, 404, "no such endpoint");
                return;
            }
            IntFunction<byte[]> own = body;
            send(ex, 200, contentType, own != null ? own.apply(n) : b.array());
        }
    }

    private static void json(HttpExchange ex, int status, String msg) throws IOException {
        send(ex, status, "application/json",
                ("{\"error\":\"" + msg.replace("\"", "\\\"") + "\"}").getBytes(StandardCharsets.UTF_8));
    }

    private static void send(HttpExchange ex, int status, String ct, byte[] body) throws IOException {
        ex.getResponseHeaders().set("Content-Type", ct);
        ex.sendResponseHeaders(status, body.length == 0 ? -1 : body.length);
        try (OutputStream o = ex.getResponseBody()) {
            o.write(body);
        }
    }

    @Override
    public void close() {
        srv.stop(0);
        exec.shutdownNow();
        try {
            exec.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
