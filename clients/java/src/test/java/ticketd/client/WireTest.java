package ticketd.client;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.IntFunction;

/** The HTTP/1.1 transport against answers written byte by byte: framings ticketd does not send, and junk. */
class WireTest {
    static final long SECOND = 1_000_000_000L;

    /** A server that answers every request on a connection with what answer gives for the request's number. */
    static final class RawServer implements AutoCloseable {
        final ServerSocket ss;
        final AtomicInteger requests = new AtomicInteger();
        final AtomicInteger connections = new AtomicInteger();
        final Thread t;

        RawServer(IntFunction<byte[]> answer, boolean closeAfterEach) throws IOException {
            ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            t = new Thread(() -> {
                while (!ss.isClosed()) {
                    try (Socket s = ss.accept()) {
                        connections.incrementAndGet();
                        InputStream in = s.getInputStream();
                        OutputStream out = s.getOutputStream();
                        while (readHead(in)) {
                            out.write(answer.apply(requests.incrementAndGet()));
                            out.flush();
                            if (closeAfterEach) {
                                break;
                            }
                        }
                    } catch (IOException e) {
                        // the client went, or the server closed
                    }
                }
            }, "raw-server");
            t.setDaemon(true);
            t.start();
        }

        String url() {
            return "http://127.0.0.1:" + ss.getLocalPort();
        }

        @Override
        public void close() throws IOException {
            ss.close();
        }

        private static boolean readHead(InputStream in) throws IOException {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            for (int c; (c = in.read()) >= 0;) {
                b.write(c);
                byte[] a = b.toByteArray();
                int n = a.length;
                if (n >= 4 && a[n - 4] == '\r' && a[n - 3] == '\n' && a[n - 2] == '\r' && a[n - 1] == '\n') {
                    return true;
                }
            }
            return false;
        }
    }

    static byte[] ids(int n, long first) {
        ByteBuffer b = ByteBuffer.allocate(8 * n);
        for (int i = 0; i < n; i++) {
            b.putLong(first + i);
        }
        return b.array();
    }

    static byte[] concat(String head, byte[] body) {
        byte[] h = head.getBytes(StandardCharsets.ISO_8859_1);
        byte[] out = new byte[h.length + body.length];
        System.arraycopy(h, 0, out, 0, h.length);
        System.arraycopy(body, 0, out, h.length, body.length);
        return out;
    }

    static HttpTransport transport() throws Exception {
        return new HttpTransport(null, "", false);
    }

    @Test
    void chunkedAndKeptAlive() throws Exception {
        byte[] body = ids(4, 100);
        String chunk1 = Integer.toHexString(10), chunk2 = Integer.toHexString(22);
        IntFunction<byte[]> answer = k -> {
            ByteArrayOutputStream o = new ByteArrayOutputStream();
            o.writeBytes("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
                    .getBytes(StandardCharsets.ISO_8859_1));
            o.writeBytes((chunk1 + ";ext=1\r\n").getBytes(StandardCharsets.ISO_8859_1));
            o.write(body, 0, 10);
            o.writeBytes(("\r\n" + chunk2 + "\r\n").getBytes(StandardCharsets.ISO_8859_1));
            o.write(body, 10, 22);
            o.writeBytes("\r\n0\r\nX-Trailer: 1\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1));
            return o.toByteArray();
        };
        try (RawServer srv = new RawServer(answer, false)) {
            HttpTransport t = transport();
            for (int i = 0; i < 3; i++) {
                Check.eq(java.util.Arrays.equals(t.get(srv.url(), "/v1/ids", 4, SECOND), body), true, "chunked body " + i);
            }
            Check.eq(srv.connections.get(), 1, "connections for three requests (keep-alive)");
            t.close();
        }
    }

    @Test
    void closeDelimitedAndStaleConnection() throws Exception {
        // HTTP/1.0 without a length: the body ends with the connection,
        // which is not reused; the next request opens another.
        byte[] body = ids(2, 7);
        try (RawServer srv = new RawServer(k -> concat("HTTP/1.0 200 OK\r\nContent-Type: application/octet-stream\r\n\r\n", body), true)) {
            HttpTransport t = transport();
            Check.eq(java.util.Arrays.equals(t.get(srv.url(), "/v1/ids", 2, SECOND), body), true, "close-delimited body");
            Check.eq(java.util.Arrays.equals(t.get(srv.url(), "/v1/ids", 2, SECOND), body), true, "second request");
            Check.eq(srv.connections.get(), 2, "connections");
            t.close();
        }
        // A server that closes a kept-alive connection without saying so:
        // the request is sent again on a new connection.
        try (RawServer srv = new RawServer(k -> concat("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 16\r\n\r\n", body), true)) {
            HttpTransport t = transport();
            t.get(srv.url(), "/v1/ids", 2, SECOND);
            Thread.sleep(50); // the server has closed its end
            Check.eq(java.util.Arrays.equals(t.get(srv.url(), "/v1/ids", 2, SECOND), body), true, "after a stale connection");
            t.close();
        }
    }

    @Test
    void junkIsABadAnswer() throws Exception {
        String[] answers = {
            "HTTP/1.1 2OO OK\r\n\r\n",
            "SSH-2.0-OpenSSH\r\n\r\n",
            "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Length: many\r\n\r\n",
            "HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
            "HTTP/1.1 200 OK\r\nX: " + "a".repeat(20_000) + "\r\n\r\n",
        };
        for (String a : answers) {
            try (RawServer srv = new RawServer(k -> a.getBytes(StandardCharsets.ISO_8859_1), true)) {
                HttpTransport t = transport();
                Check.fails(BadAnswerException.class, () -> t.get(srv.url(), "/v1/ids", 2, SECOND));
                t.close();
            }
        }
        // A body longer than asked for is cut off, not read whole.
        try (RawServer srv = new RawServer(k -> concat("HTTP/1.1 200 OK\r\nContent-Type: application/octet-stream\r\nContent-Length: 800000000\r\n\r\n", new byte[16]), true)) {
            HttpTransport t = transport();
            BadAnswerException e = Check.fails(BadAnswerException.class, () -> t.get(srv.url(), "/v1/ids", 2, SECOND));
            Check.contains(e.getMessage(), "more than 16", "message");
            t.close();
        }
    }

    @Test
    void errorAnswers() throws Exception {
        try (RawServer srv = new RawServer(k -> ("HTTP/1.1 429 Too Many Requests\r\nContent-Type: application/json\r\nRetry-After: 3600\r\nContent-Length: 26\r\n\r\n{\"error\":\"over the quota\"}").getBytes(StandardCharsets.ISO_8859_1), false)) {
            HttpTransport t = transport();
            RejectedException e = Check.fails(RejectedException.class, () -> t.get(srv.url(), "/v1/ids", 2, SECOND));
            Check.eq(e.status(), 429, "status");
            Check.eq(e.serverMessage(), "over the quota", "message");
            Check.eq(e.retryAfter(), java.time.Duration.ofMinutes(1), "Retry-After, bounded");
            t.close();
        }
    }

    @Test
    void slowDripBoundedByDeadline() throws Exception {
        // One byte every 100 ms: every read returns in time, the request as a whole does not.
        try (ServerSocket ss = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            Thread t = new Thread(() -> {
                try (Socket s = ss.accept()) {
                    byte[] a = "HTTP/1.1 200 OK\r\nContent-Length: 16\r\n\r\n".getBytes(StandardCharsets.ISO_8859_1);
                    for (byte b : a) {
                        s.getOutputStream().write(b);
                        s.getOutputStream().flush();
                        Thread.sleep(100);
                    }
                } catch (IOException | InterruptedException e) {
                    // the client gave up
                }
            });
            t.setDaemon(true);
            t.start();
            HttpTransport tr = transport();
            long t0 = System.nanoTime();
            Check.fails(java.net.http.HttpTimeoutException.class,
                    () -> tr.get("http://127.0.0.1:" + ss.getLocalPort(), "/v1/ids", 2, 500_000_000L));
            long ms = (System.nanoTime() - t0) / 1_000_000;
            Check.that(ms < 1500, "a 500 ms request took " + ms + " ms");
            tr.close();
        }
    }
}
