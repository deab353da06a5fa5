package ticketd.client;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedDeque;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.SSLSocketFactory;

/**
 * Speaks ticketd's HTTP API: GET requests over HTTP/1.1 keep-alive
 * connections, plain or TLS, on java.net sockets, each request within its
 * deadline. Not java.net.http.HttpClient: on a cold JVM its first exchange
 * took 0.5 to 1 s beyond the 1.3 s of building it (on a loaded 2-core VM),
 * against 57 ms on a socket, and a batch is of no use once maxAge has passed
 * since it was asked for; nor does HttpClient release its selector thread
 * before JDK 21. What ticketd answers (a status line, a few headers, a body
 * with Content-Length) needs little of HTTP.
 */
final class HttpTransport implements Transport {
    /** How much of an error answer is read. */
    static final int MAX_ERROR_BODY = 4 << 10;
    /** How much of an answer's head (status line and headers) is read. */
    static final int MAX_HEAD = 16 << 10;
    /** The longest pause a Retry-After can ask for: a broken or hostile answer cannot stall a buffer for hours. */
    static final Duration MAX_RETRY_AFTER = Duration.ofMinutes(1);
    /** An idle connection older than this is not reused (ticketd closes idle ones after a while). */
    private static final long MAX_IDLE_NANOS = Duration.ofSeconds(20).toNanos();

    /** The TLS context of https:// endpoints; null: the JDK's default. */
    private final SSLContext ctx;
    /** Made on the first https:// request: see tls(). */
    private volatile SSLSocketFactory tls;
    private final String auth; // the Authorization header of value requests, or null
    private final Map<String, ConcurrentLinkedDeque<Conn>> idle = new ConcurrentHashMap<>();
    private final Set<Conn> open = ConcurrentHashMap.newKeySet();
    /** Sockets still connecting or shaking hands: close() closes them, which ends a connect or a read at once. */
    private final Set<Socket> connecting = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /** With https (an endpoint is https://), the TLS context is made now, before any request's deadline runs. */
    HttpTransport(SSLContext ctx, String token, boolean https) throws IOException {
        this.ctx = ctx;
        this.auth = token == null || token.isEmpty() ? null : "Bearer " + token;
        if (https) {
            tls();
        }
    }

    /** One connection to one endpoint. */
    private static final class Conn {
        final String base;
        final Socket s;
        final InputStream in;
        final OutputStream out;
        long idleSince;
        /** The exchange's deadline (System.nanoTime) and length, which every read of the socket keeps to. */
        long deadline, timeout;

        Conn(String base, Socket s) throws IOException {
            this.base = base;
            this.s = s;
            this.in = new BufferedInputStream(new DeadlineInput(this, s.getInputStream()), 64 << 10);
            this.out = s.getOutputStream();
        }
    }

    /**
     * The socket's input, each read bounded by what is left of the exchange's
     * deadline: a server that sends one byte at a time cannot stretch a
     * request past it.
     */
    private static final class DeadlineInput extends java.io.FilterInputStream {
        private final Conn c;

        DeadlineInput(Conn c, InputStream in) {
            super(in);
            this.c = c;
        }

        @Override
        public int read() throws IOException {
            c.s.setSoTimeout(millisLeft(c.deadline, c.timeout));
            return super.read();
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            c.s.setSoTimeout(millisLeft(c.deadline, c.timeout));
            return super.read(b, off, len);
        }
    }

    /** An answer: status, the headers the client reads, the body (at most a limit). */
    static final class Answer {
        int status;
        String contentType = "";
        String retryAfter = "";
        long contentLength = -1;
        boolean chunked, close;
        byte[] body;
        boolean tooLong;
    }

    @Override
    public byte[] get(String base, String path, int n, long timeoutNanos) throws Exception {
        String sep = path.indexOf('?') >= 0 ? "&" : "?";
        int want = 8 * n;
        Answer a = exchange(base, path + sep + "format=binary&n=" + n, true, want, timeoutNanos);
        if (a.status != 200) {
            throw statusError(base, a);
        }
        int semi = a.contentType.indexOf(';');
        String media = (semi >= 0 ? a.contentType.substring(0, semi) : a.contentType).trim().toLowerCase(Locale.ROOT);
        if (!media.equals("application/octet-stream")) {
            throw new BadAnswerException("Content-Type \"" + a.contentType + "\", want application/octet-stream");
        }
        if (a.tooLong || a.body.length != want) {
            throw new BadAnswerException((a.tooLong ? "more than " + want : String.valueOf(a.body.length))
                    + " bytes for " + n + " values, want " + want);
        }
        return a.body;
    }

    @Override
    public void probe(String base, long timeoutNanos) throws Exception {
        Answer a = exchange(base, "/readyz", false, MAX_ERROR_BODY, timeoutNanos);
        if (a.status != 200) {
            throw statusError(base, a);
        }
    }

    /**
     * Sends GET target to base and reads the answer, within timeoutNanos. A
     * kept-alive connection that the server had closed meanwhile fails
     * before any answer: the request is then sent once more on a new one (a
     * GET: at worst its values are gaps).
     */
    private Answer exchange(String base, String target, boolean withAuth, int limit, long timeoutNanos)
            throws Exception {
        long deadline = System.nanoTime() + timeoutNanos;
        boolean fresh = false;
        for (;;) {
            if (closed) {
                throw new ClosedException();
            }
            Conn c = pooled(base);
            if (c == null) {
                c = connect(base, deadline, timeoutNanos);
                fresh = true;
            }
            boolean reuse = false;
            c.deadline = deadline;
            c.timeout = timeoutNanos;
            try {
                Answer a;
                try {
                    send(c, base, target, withAuth);
                    a = read(c, limit, deadline, timeoutNanos);
                } catch (EOFException | java.net.SocketException stale) {
                    if (fresh || closed) {
                        throw stale;
                    }
                    continue; // finally closes it
                }
                reuse = !a.close && !a.tooLong;
                return a;
            } finally {
                if (reuse && !closed) {
                    c.idleSince = System.nanoTime();
                    idle.computeIfAbsent(base, k -> new ConcurrentLinkedDeque<>()).push(c);
                } else {
                    drop(c);
                }
            }
        }
    }

    private Conn pooled(String base) {
        ConcurrentLinkedDeque<Conn> q = idle.get(base);
        if (q == null) {
            return null;
        }
        for (Conn c; (c = q.poll()) != null;) {
            if (System.nanoTime() - c.idleSince < MAX_IDLE_NANOS && !c.s.isClosed()) {
                return c;
            }
            drop(c);
        }
        return null;
    }

    private Conn connect(String base, long deadline, long timeoutNanos) throws Exception {
        URI u = URI.create(base);
        boolean https = u.getScheme().equals("https");
        String host = u.getHost();
        int port = u.getPort() > 0 ? u.getPort() : https ? 443 : 80;
        Socket s = new Socket();
        Socket raw = s;
        connecting.add(raw);
        Conn c = null;
        try {
            if (closed) { // close() came before the socket was in connecting
                throw new ClosedException();
            }
            s.setTcpNoDelay(true);
            s.connect(new InetSocketAddress(host, port), millisLeft(deadline, timeoutNanos));
            if (https) {
                SSLSocket ss = (SSLSocket) tls().createSocket(s, host, port, true);
                SSLParameters p = ss.getSSLParameters();
                p.setEndpointIdentificationAlgorithm("HTTPS"); // the certificate must name the host
                p.setProtocols(new String[] {"TLSv1.3", "TLSv1.2"});
                ss.setSSLParameters(p);
                ss.setSoTimeout(millisLeft(deadline, timeoutNanos));
                ss.startHandshake();
                s = ss;
            }
            c = new Conn(base, s);
            open.add(c);
            if (closed) {
                throw new ClosedException();
            }
            return c;
        } catch (SocketTimeoutException e) {
            s.close();
            throw timeout(timeoutNanos);
        } catch (Exception e) {
            if (c != null) {
                drop(c);
            } else {
                s.close();
            }
            if (closed) {
                throw new ClosedException();
            }
            throw e;
        } finally {
            connecting.remove(raw);
        }
    }

    /**
     * The TLS socket factory, made when first needed: a client of http://
     * endpoints alone never pays for TLS (the JDK's default context reads
     * its CA store: 0.2 to 0.9 s on a cold JVM, which build() took).
     */
    private SSLSocketFactory tls() throws IOException {
        SSLSocketFactory f = tls;
        if (f != null) {
            return f;
        }
        synchronized (this) {
            if (tls == null) {
                SSLContext c;
                try {
                    c = ctx != null ? ctx : SSLContext.getDefault();
                } catch (java.security.NoSuchAlgorithmException e) {
                    throw new IOException("ticketd: the JDK has no default TLS context", e);
                }
                tls = c.getSocketFactory();
            }
            return tls;
        }
    }

    private void send(Conn c, String base, String target, boolean withAuth) throws IOException {
        URI u = URI.create(base);
        String hostHeader = u.getRawAuthority();
        StringBuilder b = new StringBuilder(256);
        String prefix = u.getRawPath() == null ? "" : u.getRawPath();
        b.append("GET ").append(prefix).append(target).append(" HTTP/1.1\r\n");
        b.append("Host: ").append(hostHeader).append("\r\n");
        b.append("User-Agent: ticketd-client-java\r\n");
        b.append("Accept: application/octet-stream\r\n");
        if (withAuth && auth != null) {
            b.append("Authorization: ").append(auth).append("\r\n");
        }
        b.append("\r\n");
        c.out.write(b.toString().getBytes(StandardCharsets.ISO_8859_1));
        c.out.flush();
    }

    /** Reads one answer, each blocking read bounded by what is left of the deadline. */
    private Answer read(Conn c, int limit, long deadline, long timeoutNanos) throws Exception {
        try {
            Answer a = new Answer();
            c.s.setSoTimeout(millisLeft(deadline, timeoutNanos));
            String status = line(c, new int[] {0});
            // HTTP/1.1 200 OK
            if (!status.startsWith("HTTP/1.") || status.length() < 12) {
                throw new BadAnswerException("status line \"" + cut(status) + "\"");
            }
            try {
                a.status = Integer.parseInt(status.substring(9, 12));
            } catch (NumberFormatException e) {
                throw new BadAnswerException("status line \"" + cut(status) + "\"");
            }
            a.close = status.startsWith("HTTP/1.0");
            int[] headBytes = {status.length()};
            for (String h; !(h = line(c, headBytes)).isEmpty();) {
                int colon = h.indexOf(':');
                if (colon <= 0) {
                    throw new BadAnswerException("header line \"" + cut(h) + "\"");
                }
                String name = h.substring(0, colon).trim().toLowerCase(Locale.ROOT);
                String value = h.substring(colon + 1).trim();
                switch (name) {
                    case "content-type" -> a.contentType = value;
                    case "retry-after" -> a.retryAfter = value;
                    case "content-length" -> {
                        try {
                            a.contentLength = Long.parseLong(value);
                        } catch (NumberFormatException e) {
                            throw new BadAnswerException("Content-Length \"" + cut(value) + "\"");
                        }
                    }
                    case "transfer-encoding" -> a.chunked = value.toLowerCase(Locale.ROOT).contains("chunked");
                    case "connection" -> a.close |= value.toLowerCase(Locale.ROOT).contains("close");
                    default -> {}
                }
            }
            int max = a.status == 200 ? limit : MAX_ERROR_BODY;
            if (a.chunked) {
                readChunked(c, a, max, deadline, timeoutNanos);
            } else if (a.contentLength >= 0) {
                if (a.contentLength > max) {
                    a.tooLong = true;
                    a.body = new byte[0];
                } else {
                    a.body = readN(c, (int) a.contentLength, deadline, timeoutNanos);
                }
            } else {
                // No length: the body ends with the connection.
                a.close = true;
                a.body = readToEnd(c, max, a, deadline, timeoutNanos);
            }
            return a;
        } catch (SocketTimeoutException e) {
            throw timeout(timeoutNanos);
        }
    }

    private byte[] readN(Conn c, int n, long deadline, long timeoutNanos) throws IOException {
        byte[] b = new byte[n];
        int got = 0;
        while (got < n) {
            c.s.setSoTimeout(millisLeft(deadline, timeoutNanos));
            int r = c.in.read(b, got, n - got);
            if (r < 0) {
                throw new EOFException("answer shorter than its Content-Length (" + got + " of " + n + " bytes)");
            }
            got += r;
        }
        return b;
    }

    private byte[] readToEnd(Conn c, int max, Answer a, long deadline, long timeoutNanos) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        byte[] buf = new byte[8192];
        for (;;) {
            c.s.setSoTimeout(millisLeft(deadline, timeoutNanos));
            int r = c.in.read(buf);
            if (r < 0) {
                return out.toByteArray();
            }
            if (out.size() + r > max) {
                a.tooLong = true;
                return out.toByteArray();
            }
            out.write(buf, 0, r);
        }
    }

    private void readChunked(Conn c, Answer a, int max, long deadline, long timeoutNanos) throws IOException {
        java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream();
        int[] headBytes = {0};
        for (;;) {
            String sizeLine = line(c, headBytes);
            int semi = sizeLine.indexOf(';');
            int size;
            try {
                size = Integer.parseInt((semi >= 0 ? sizeLine.substring(0, semi) : sizeLine).trim(), 16);
            } catch (NumberFormatException e) {
                throw new BadAnswerException("chunk size \"" + cut(sizeLine) + "\"");
            }
            if (size < 0 || out.size() + (long) size > max) {
                a.tooLong = true;
                a.body = out.toByteArray();
                return;
            }
            if (size == 0) {
                while (!line(c, headBytes).isEmpty()) {
                    // trailers
                }
                a.body = out.toByteArray();
                return;
            }
            out.write(readN(c, size, deadline, timeoutNanos));
            line(c, headBytes); // the CRLF after the chunk
        }
    }

    /** One line of the answer's head, without its CRLF; the head in all is at most MAX_HEAD bytes. */
    private static String line(Conn c, int[] headBytes) throws IOException {
        StringBuilder b = new StringBuilder(64);
        for (;;) {
            int ch = c.in.read();
            if (ch < 0) {
                throw new EOFException("connection closed before the answer's end");
            }
            if (++headBytes[0] > MAX_HEAD) {
                throw new BadAnswerException("answer head longer than " + MAX_HEAD + " bytes");
            }
            if (ch == '\n') {
                int len = b.length();
                if (len > 0 && b.charAt(len - 1) == '\r') {
                    b.setLength(len - 1);
                }
                return b.toString();
            }
            b.append((char) ch);
        }
    }

    private static String cut(String s) {
        return s.length() > 80 ? s.substring(0, 80) + "…" : s;
    }

    private static int millisLeft(long deadline, long timeoutNanos) throws SocketTimeoutException {
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            throw new SocketTimeoutException("deadline passed");
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (left + 999_999) / 1_000_000));
    }

    private static HttpTimeoutException timeout(long timeoutNanos) {
        return new HttpTimeoutException("no answer within " + Duration.ofNanos(timeoutNanos).toMillis() + " ms");
    }

    private void drop(Conn c) {
        open.remove(c);
        try {
            c.s.close();
        } catch (IOException ignored) {
            // closing: nothing to do about it
        }
    }

    /**
     * Closes every connection, those in use or still connecting included:
     * requests in flight fail at once, without waiting for a connect or a
     * TLS handshake to time out.
     */
    @Override
    public void close() {
        closed = true;
        for (Socket s : connecting) {
            try {
                s.close();
            } catch (IOException ignored) {
                // closing: nothing to do about it
            }
        }
        for (Conn c : open) {
            drop(c);
        }
        idle.clear();
    }

    /** The exception of a non-200 answer, with ticketd's {"error": …}. */
    static StatusException statusError(String base, Answer a) {
        String text = new String(a.body == null ? new byte[0] : a.body, StandardCharsets.UTF_8).strip();
        String msg = Json.errorField(text);
        if (msg == null) {
            msg = text;
        }
        if (msg.length() > 200) {
            msg = msg.substring(0, 200) + "…";
        }
        Duration retryAfter = Duration.ZERO;
        try {
            long sec = Long.parseLong(a.retryAfter.strip());
            if (sec > 0) {
                retryAfter = Duration.ofSeconds(Math.min(sec, MAX_RETRY_AFTER.toSeconds()));
            }
        } catch (NumberFormatException none) {
            // no Retry-After, or an HTTP date: none
        }
        return StatusException.of(base, a.status, msg, retryAfter);
    }
}
