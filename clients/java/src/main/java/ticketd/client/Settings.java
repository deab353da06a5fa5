package ticketd.client;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import javax.net.ssl.SSLContext;

/** A Builder's settings with their defaults filled in and checked: what a client runs with. */
final class Settings {
    final List<String> endpoints; // base URLs without a trailing slash
    final String token; // "" for none
    final SSLContext sslContext; // null: the JDK's default
    final long callTimeout, maxAge, batchPeriod, probeEvery; // nanoseconds
    final int minBatch, maxBatch, maxTicketBatch;
    final boolean strictlyIncreasing;

    Settings(TicketdClient.Builder b) {
        if (b.endpoints.isEmpty()) {
            throw new IllegalArgumentException("ticketd: no endpoint: give at least one base URL, as http://10.0.0.5:8080");
        }
        endpoints = bases(b.endpoints);
        sslContext = b.sslContext;
        token = b.token == null ? "" : b.token;
        strictlyIncreasing = b.strictlyIncreasing;

        Duration maxAgeD = orElse(b.maxAge, TicketdClient.DEFAULT_MAX_AGE);
        Duration callD = b.callTimeout != null ? b.callTimeout
                : min(TicketdClient.DEFAULT_CALL_TIMEOUT, maxAgeD.dividedBy(2));
        int maxB = b.maxBatch != 0 ? b.maxBatch : Math.max(TicketdClient.DEFAULT_MAX_BATCH, b.minBatch);
        int minB = b.minBatch != 0 ? b.minBatch : Math.min(TicketdClient.DEFAULT_MIN_BATCH, maxB);
        int maxT = b.maxTicketBatch != 0 ? b.maxTicketBatch : TicketdClient.DEFAULT_MAX_TICKET_BATCH;
        Duration periodD = b.batchPeriod != null ? b.batchPeriod : maxAgeD.dividedBy(10);
        Duration probeD = orElse(b.probeEvery, TicketdClient.DEFAULT_PROBE_EVERY);

        if (maxAgeD.compareTo(TicketdClient.MIN_MAX_AGE) < 0 || maxAgeD.compareTo(TicketdClient.MAX_MAX_AGE) > 0) {
            throw bad("maxAge " + maxAgeD + ": want " + TicketdClient.MIN_MAX_AGE + " to " + TicketdClient.MAX_MAX_AGE);
        }
        if (callD.compareTo(TicketdClient.MIN_CALL_TIMEOUT) < 0 || callD.compareTo(maxAgeD) > 0) {
            throw bad("callTimeout " + callD + ": want " + TicketdClient.MIN_CALL_TIMEOUT + " to maxAge (" + maxAgeD + ")");
        }
        if (minB < 1 || minB > maxB || maxB > TicketdClient.MAX_MAX_BATCH) {
            throw bad("minBatch " + minB + ", maxBatch " + maxB + ": want 1 <= minBatch <= maxBatch <= "
                    + TicketdClient.MAX_MAX_BATCH);
        }
        if (maxT < 1 || maxT > TicketdClient.MAX_MAX_BATCH) {
            throw bad("maxTicketBatch " + maxT + ": want 1 to " + TicketdClient.MAX_MAX_BATCH);
        }
        if (periodD.compareTo(TicketdClient.MIN_BATCH_PERIOD) < 0 || periodD.compareTo(maxAgeD.dividedBy(2)) > 0) {
            throw bad("batchPeriod " + periodD + ": want " + TicketdClient.MIN_BATCH_PERIOD + " to maxAge/2 ("
                    + maxAgeD.dividedBy(2) + ")");
        }
        if (probeD.compareTo(TicketdClient.MIN_PROBE_EVERY) < 0 || probeD.compareTo(TicketdClient.MAX_PROBE_EVERY) > 0) {
            throw bad("probeEvery " + probeD + ": want " + TicketdClient.MIN_PROBE_EVERY + " to "
                    + TicketdClient.MAX_PROBE_EVERY);
        }
        if (!tokenSyntax(token)) {
            // Never quoted: it is a secret.
            throw bad("token: want letters, digits and - . _ ~ + / (then optional =), as ticketd's tokens are");
        }
        maxAge = maxAgeD.toNanos();
        callTimeout = callD.toNanos();
        batchPeriod = periodD.toNanos();
        probeEvery = probeD.toNanos();
        minBatch = minB;
        maxBatch = maxB;
        maxTicketBatch = maxT;
    }

    /** The settings in effect, the token shown as [redacted]: a log line never holds it. */
    @Override
    public String toString() {
        return "endpoints=" + endpoints + ", token=" + (token.isEmpty() ? "" : "[redacted]")
                + ", sslContext=" + (sslContext != null) + ", callTimeout=" + Duration.ofNanos(callTimeout)
                + ", maxAge=" + Duration.ofNanos(maxAge) + ", minBatch=" + minBatch + ", maxBatch=" + maxBatch
                + ", maxTicketBatch=" + maxTicketBatch + ", batchPeriod=" + Duration.ofNanos(batchPeriod)
                + ", probeEvery=" + Duration.ofNanos(probeEvery) + ", strictlyIncreasing=" + strictlyIncreasing;
    }

    private static IllegalArgumentException bad(String msg) {
        return new IllegalArgumentException("ticketd: bad setting: " + msg);
    }

    private static Duration orElse(Duration d, Duration def) {
        return d != null ? d : def;
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    /** The endpoints' base URLs without a trailing slash; refuses what is not an http(s) base URL. */
    private static List<String> bases(List<String> endpoints) {
        List<String> out = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (String e : endpoints) {
            URI u;
            try {
                u = new URI(e);
            } catch (URISyntaxException ex) {
                throw badEndpoint(e, ex.getMessage());
            }
            String scheme = u.getScheme();
            if (scheme == null || !(scheme.equals("http") || scheme.equals("https"))) {
                throw badEndpoint(e, "want an http:// or https:// URL");
            }
            if (u.getHost() == null) {
                throw badEndpoint(e, "no host");
            }
            if (u.getRawQuery() != null || u.getRawFragment() != null || u.getRawUserInfo() != null) {
                throw badEndpoint(e, "want a base URL without query, fragment or user");
            }
            String base = e;
            while (base.endsWith("/")) {
                base = base.substring(0, base.length() - 1);
            }
            if (!seen.add(base)) {
                throw badEndpoint(e, "given twice");
            }
            out.add(base);
        }
        return List.copyOf(out);
    }

    private static IllegalArgumentException badEndpoint(String e, String why) {
        return new IllegalArgumentException("ticketd: bad endpoint \"" + e + "\": " + why);
    }

    /**
     * Whether tok is empty or RFC 6750's token syntax, which ticketd accepts:
     * letters, digits, - . _ ~ + /, then optional '='.
     */
    static boolean tokenSyntax(String tok) {
        int i = 0;
        for (; i < tok.length(); i++) {
            char ch = tok.charAt(i);
            boolean ok = ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9'
                    || "-._~+/".indexOf(ch) >= 0;
            if (!ok) {
                break;
            }
        }
        if (i == 0 && !tok.isEmpty()) {
            return false;
        }
        for (; i < tok.length(); i++) {
            if (tok.charAt(i) != '=') {
                return false;
            }
        }
        return true;
    }
}
