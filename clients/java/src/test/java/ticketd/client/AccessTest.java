package ticketd.client;

import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.Comparator;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;

/** Tokens, TLS, and a token's quota (429). */
class AccessTest {
    static final long A = ClientTest.A, B = ClientTest.B;

    @Test
    void tokenSentWithValuesOnly() throws Exception {
        try (FakeTicketd a = new FakeTicketd(A)) {
            a.token = "s3cret-token";
            a.ready = false; // so that the client probes it below
            try (TicketdClient c = TicketdClient.builder().endpoints(a.url).token("s3cret-token")
                    .probeEvery(Duration.ofMillis(20)).build()) {
                c.next();
                c.ticket("orders");
                for (FakeTicketd.Req r : a.valueRequests()) {
                    Check.eq(r.auth(), "Bearer s3cret-token", "Authorization of " + r.path());
                }
            }
            try (TicketdClient c = TicketdClient.builder().endpoints(a.url).build()) {
                RejectedException e = Check.fails(RejectedException.class, c::next);
                Check.eq(e.status(), 401, "status without a token");
            }
            try (TicketdClient c = TicketdClient.builder().endpoints(a.url).token("other").build()) {
                RejectedException e = Check.fails(RejectedException.class, c::next);
                Check.eq(e.status(), 403, "status with a token the fake refuses");
                Check.that(!e.getMessage().contains("other"), "the message shows the token");
            }
        }
        // Probes carry no token.
        try (FakeTicketd a = new FakeTicketd(A); FakeTicketd b = new FakeTicketd(B);
                TicketdClient c = TicketdClient.builder().endpoints(a.url, b.url).token("s3cret-token")
                        .probeEvery(Duration.ofMillis(20)).build()) {
            a.status = 503;
            a.ready = false;
            c.next();
            Check.eventually(3000, "a probe", () -> a.requests().stream().anyMatch(r -> r.path().equals("/readyz")));
            for (FakeTicketd.Req r : a.requests()) {
                if (r.path().equals("/readyz")) {
                    Check.eq(r.auth(), null, "Authorization of a probe");
                }
            }
        }
    }

    @Test
    void quotaPaces() throws Exception {
        // Over the token's quota (429 with Retry-After: 1) the caller waits
        // for the refill after the pause instead of failing.
        try (FakeTicketd a = new FakeTicketd(A)) {
            a.status = 429;
            a.retryAfter = "1";
            a.statusTimes = 1;
            try (TicketdClient c = TicketdClient.builder().endpoints(a.url).build()) {
                long t0 = System.nanoTime();
                c.next();
                long ms = (System.nanoTime() - t0) / 1_000_000;
                Check.that(ms >= 900, "the first ID came after " + ms + " ms, want the Retry-After of 1 s");
                Stats.StreamStats st = c.stats().ids();
                Check.eq(st.throttled(), 1L, "throttled");
                long gap = 0;
                java.util.List<FakeTicketd.Req> rs = a.valueRequests();
                Check.that(rs.size() >= 2, "requests " + rs.size());
                gap = (rs.get(1).atNanos() - rs.get(0).atNanos()) / 1_000_000;
                Check.that(gap >= 900, "asked again after " + gap + " ms, want the Retry-After");
            }
        }
    }

    @Test
    void tlsWithOwnCA() throws Exception {
        Path dir = Files.createTempDirectory("ticketd-tls");
        try {
            String pass = "test-" + System.nanoTime();
            Path ks = dir.resolve("server.p12"), pem = dir.resolve("ca.pem");
            keytool(pass, "-genkeypair", "-alias", "ticketd", "-keyalg", "EC", "-groupname", "secp256r1",
                    "-dname", "CN=127.0.0.1", "-ext", "san=ip:127.0.0.1", "-validity", "2", "-keystore", ks.toString(),
                    "-storetype", "PKCS12", "-storepass:env", "KS_PASS", "-keypass:env", "KS_PASS");
            keytool(pass, "-exportcert", "-rfc", "-alias", "ticketd", "-keystore", ks.toString(), "-storepass:env",
                    "KS_PASS", "-file", pem.toString());
            KeyStore store = KeyStore.getInstance("PKCS12");
            try (InputStream in = Files.newInputStream(ks)) {
                store.load(in, pass.toCharArray());
            }
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(store, pass.toCharArray());
            SSLContext serverTls = SSLContext.getInstance("TLS");
            serverTls.init(kmf.getKeyManagers(), null, null);
            try (FakeTicketd a = new FakeTicketd(A, serverTls)) {
                // Deadlines for a cold JVM doing TLS on both ends: this test is
                // about trust, not speed.
                try (TicketdClient c = TicketdClient.builder().endpoints(a.url).sslContext(Tls.trusting(pem))
                        .maxAge(Duration.ofSeconds(10)).callTimeout(Duration.ofSeconds(5)).build()) {
                    Check.that(c.next() >= A, "an ID over TLS");
                }
                // Without the CA, the endpoint's certificate is refused.
                try (TicketdClient c = TicketdClient.builder().endpoints(a.url).callTimeout(Duration.ofMillis(400))
                        .build()) {
                    UnavailableException e = Check.fails(UnavailableException.class, c::next);
                    Check.that(e.getMessage().toLowerCase().contains("certif")
                            || e.getMessage().contains("SSLHandshake") || e.getMessage().contains("PKIX"),
                            "not a certificate error: " + e.getMessage());
                }
            }
            Check.fails(java.security.GeneralSecurityException.class, () -> Tls.trusting(ks));
        } finally {
            try (var files = Files.walk(dir)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /** Runs the JDK's keytool, the store's password in its environment (never on a command line). */
    private static void keytool(String pass, String... args) throws Exception {
        String[] cmd = new String[args.length + 1];
        cmd[0] = Path.of(System.getProperty("java.home"), "bin", "keytool").toString();
        System.arraycopy(args, 0, cmd, 1, args.length);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("KS_PASS", pass);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes());
        Check.eq(p.waitFor(), 0, "keytool exit status (" + out.strip() + ")");
    }
}
