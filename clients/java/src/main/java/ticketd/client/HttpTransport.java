package ticketd.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/** Speaks ticketd's HTTP API with java.net.http: binary batches, readiness probes. */
final class HttpTransport implements Transport {
    /** How much of an error answer is read. */
    static final int MAX_ERROR_BODY = 4 << 10;
    /** The longest pause a Retry-After can ask for: a broken or hostile answer cannot stall a buffer for hours. */
    static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(1);

    // The own client is dropped at close: on JDK 17 to 20, which have no
    // HttpClient.shutdownNow, its selector thread ends once it is collected.
    private volatile HttpClient hc;
    private final boolean ownClient;
    private final ExecutorService ownExecutor; // the own client's, shut down by close; null otherwise
    private final String auth; // the Authorization header of value requests, or null
    private final Set<CompletableFuture<?>> inFlight = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    HttpTransport(HttpClient hc, boolean ownClient, ExecutorService ownExecutor, String token) {
        this.hc = hc;
        this.ownClient = ownClient;
        this.ownExecutor = ownExecutor;
        this.auth = token == null || token.isEmpty() ? null : "Bearer " + token;
    }

    @Override
    public byte[] get(String base, String path, int n, long timeoutNanos) throws Exception {
        String sep = path.indexOf('?') >= 0 ? "&" : "?";
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path + sep + "format=binary&n=" + n))
                .GET()
                .version(HttpClient.Version.HTTP_1_1)
                .timeout(Duration.ofNanos(timeoutNanos))
                .header("Accept", "application/octet-stream");
        if (auth != null) {
            b.header("Authorization", auth);
        }
        int want = 8 * n;
        HttpResponse<Body> r = send(b.build(), want, timeoutNanos);
        Body body = r.body();
        if (r.statusCode() != 200) {
            throw statusError(base, r.statusCode(), r.headers(), body);
        }
        String ct = r.headers().firstValue("Content-Type").orElse("");
        int semi = ct.indexOf(';');
        String media = (semi >= 0 ? ct.substring(0, semi) : ct).trim().toLowerCase(Locale.ROOT);
        if (!media.equals("application/octet-stream")) {
            throw new BadAnswerException("Content-Type \"" + ct + "\", want application/octet-stream");
        }
        if (body.tooLong || body.bytes.length != want) {
            throw new BadAnswerException((body.tooLong ? "more than " + want : String.valueOf(body.bytes.length))
                    + " bytes for " + n + " values, want " + want);
        }
        return body.bytes;
    }

    @Override
    public void probe(String base, long timeoutNanos) throws Exception {
        HttpRequest req = HttpRequest.newBuilder(URI.create(base + "/readyz"))
                .GET()
                .version(HttpClient.Version.HTTP_1_1)
                .timeout(Duration.ofNanos(timeoutNanos))
                .build();
        HttpResponse<Body> r = send(req, MAX_ERROR_BODY, timeoutNanos);
        if (r.statusCode() != 200) {
            throw statusError(base, r.statusCode(), r.headers(), r.body());
        }
    }

    /** Sends req and waits for the whole answer (at most limit bytes of body) within timeoutNanos. */
    private HttpResponse<Body> send(HttpRequest req, int limit, long timeoutNanos) throws Exception {
        HttpClient hc = this.hc;
        if (closed || hc == null) {
            throw new ClosedException();
        }
        HttpResponse.BodyHandler<Body> handler =
                info -> new LimitedBody(info.statusCode() == 200 ? limit : MAX_ERROR_BODY);
        CompletableFuture<HttpResponse<Body>> f = hc.sendAsync(req, handler);
        inFlight.add(f);
        try {
            if (closed) {
                throw new ClosedException();
            }
            return f.get(timeoutNanos, TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new HttpTimeoutException("no answer within " + Duration.ofNanos(timeoutNanos).toMillis() + " ms");
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            if (c instanceof Exception ex) {
                throw ex;
            }
            throw e;
        } finally {
            inFlight.remove(f);
            f.cancel(true); // a no-op once it completed; aborts the exchange otherwise
        }
    }

    @Override
    public void close() {
        closed = true;
        for (CompletableFuture<?> f : inFlight) {
            f.cancel(true);
        }
        if (ownClient) {
            // JDK 21 and later: HttpClient.shutdownNow closes its connections and
            // threads. On JDK 17 to 20 they end when the client is unreachable.
            try {
                HttpClient.class.getMethod("shutdownNow").invoke(hc);
            } catch (ReflectiveOperationException | RuntimeException older) {
                // no shutdownNow before JDK 21
            }
            hc = null;
            ownExecutor.shutdownNow();
        }
    }

    /** The exception of a non-200 answer, with ticketd's {"error": …}. */
    static StatusException statusError(String base, int status, HttpHeaders h, Body body) {
        String text = new String(body.bytes, StandardCharsets.UTF_8).strip();
        String msg = Json.errorField(text);
        if (msg == null) {
            msg = text;
        }
        if (msg.length() > 200) {
            msg = msg.substring(0, 200) + "…";
        }
        Duration retryAfter = Duration.ZERO;
        String ra = h.firstValue("Retry-After").orElse("").strip();
        try {
            long sec = Long.parseLong(ra);
            if (sec > 0) {
                retryAfter = Duration.ofSeconds(Math.min(sec, MAX_RETRY_AFTER.toSeconds()));
            }
        } catch (NumberFormatException none) {
            // no Retry-After, or an HTTP date: none
        }
        return StatusException.of(base, status, msg, retryAfter);
    }

    /** An answer's body, read up to a limit. */
    static final class Body {
        final byte[] bytes;
        final boolean tooLong;

        Body(byte[] bytes, boolean tooLong) {
            this.bytes = bytes;
            this.tooLong = tooLong;
        }
    }

    /**
     * Reads a body into one array, up to limit bytes: a longer answer is cut
     * off (its connection dropped) rather than read whole, so that a broken or
     * hostile endpoint cannot make the client hold gigabytes.
     */
    static final class LimitedBody implements HttpResponse.BodySubscriber<Body> {
        private final int limit;
        private final CompletableFuture<Body> result = new CompletableFuture<>();
        private Flow.Subscription sub;
        private byte[] buf = new byte[0];
        private int n;

        LimitedBody(int limit) {
            this.limit = limit;
        }

        @Override
        public CompletionStage<Body> getBody() {
            return result;
        }

        @Override
        public void onSubscribe(Flow.Subscription s) {
            sub = s;
            s.request(Long.MAX_VALUE);
        }

        @Override
        public void onNext(List<ByteBuffer> items) {
            if (result.isDone()) {
                return;
            }
            for (ByteBuffer bb : items) {
                int r = bb.remaining();
                if (n + r > limit) {
                    sub.cancel();
                    result.complete(new Body(java.util.Arrays.copyOf(buf, n), true));
                    return;
                }
                if (n + r > buf.length) {
                    buf = java.util.Arrays.copyOf(buf, Math.min(limit, Math.max(n + r, 2 * buf.length)));
                }
                bb.get(buf, n, r);
                n += r;
            }
        }

        @Override
        public void onError(Throwable t) {
            result.completeExceptionally(t);
        }

        @Override
        public void onComplete() {
            result.complete(new Body(n == buf.length ? buf : java.util.Arrays.copyOf(buf, n), false));
        }
    }
}
