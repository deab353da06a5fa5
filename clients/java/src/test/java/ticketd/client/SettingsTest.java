package ticketd.client;

import java.time.Duration;
import java.util.function.Consumer;

class SettingsTest {
    private static TicketdClient.Builder base() {
        return TicketdClient.builder().endpoints("http://127.0.0.1:1");
    }

    @Test
    void defaults() {
        Settings s = base().settings();
        Check.eq(s.maxAge, Duration.ofSeconds(1).toNanos(), "maxAge");
        Check.eq(s.callTimeout, Duration.ofMillis(500).toNanos(), "callTimeout");
        Check.eq(s.minBatch, 16, "minBatch");
        Check.eq(s.maxBatch, 10_000, "maxBatch");
        Check.eq(s.maxTicketBatch, 1000, "maxTicketBatch");
        Check.eq(s.batchPeriod, Duration.ofMillis(100).toNanos(), "batchPeriod");
        Check.eq(s.probeEvery, Duration.ofMillis(250).toNanos(), "probeEvery");
        Check.eq(s.endpoints, java.util.List.of("http://127.0.0.1:1"), "endpoints");
        // Defaults that follow other settings.
        Settings small = base().maxAge(Duration.ofMillis(200)).settings();
        Check.eq(small.callTimeout, Duration.ofMillis(100).toNanos(), "callTimeout with maxAge 200ms");
        Check.eq(small.batchPeriod, Duration.ofMillis(20).toNanos(), "batchPeriod with maxAge 200ms");
        Check.eq(base().minBatch(20_000).settings().maxBatch, 20_000, "maxBatch with minBatch 20000");
        Check.eq(base().endpoints("http://h:1/", "https://h:2").settings().endpoints,
                java.util.List.of("http://h:1", "https://h:2"), "trailing slash");
    }

    @Test
    void refuses() {
        record Case(String name, Consumer<TicketdClient.Builder> set, String want) {}
        Case[] cases = {
            new Case("no endpoint", b -> b.endpoints(), "no endpoint"),
            new Case("ftp", b -> b.endpoints("ftp://h:1"), "http:// or https://"),
            new Case("no host", b -> b.endpoints("http:///x"), "no host"),
            new Case("query", b -> b.endpoints("http://h:1/?a=b"), "without query"),
            new Case("user", b -> b.endpoints("http://u@h:1"), "without query, fragment or user"),
            new Case("twice", b -> b.endpoints("http://h:1", "http://h:1/"), "given twice"),
            new Case("maxAge 1ns", b -> b.maxAge(Duration.ofNanos(1)), "maxAge"),
            new Case("maxAge 2h", b -> b.maxAge(Duration.ofHours(2)), "maxAge"),
            new Case("callTimeout > maxAge", b -> b.callTimeout(Duration.ofSeconds(2)), "callTimeout"),
            new Case("callTimeout 0", b -> b.callTimeout(Duration.ZERO), "callTimeout"),
            new Case("min > max", b -> b.minBatch(100).maxBatch(10), "minBatch"),
            new Case("max too big", b -> b.maxBatch(2_000_000), "maxBatch"),
            new Case("negative min", b -> b.minBatch(-1), "minBatch"),
            new Case("ticket batch", b -> b.maxTicketBatch(-5), "maxTicketBatch"),
            new Case("period", b -> b.batchPeriod(Duration.ofMillis(600)), "batchPeriod"),
            new Case("probe", b -> b.probeEvery(Duration.ofMillis(1)), "probeEvery"),
            new Case("token", b -> b.token("not a token!"), "token"),
        };
        for (Case c : cases) {
            TicketdClient.Builder b = base();
            c.set.accept(b);
            IllegalArgumentException e = Check.fails(IllegalArgumentException.class, b::build);
            Check.contains(e.getMessage(), c.want, c.name);
        }
        // A refused token is never quoted.
        IllegalArgumentException e = Check.fails(IllegalArgumentException.class, () -> base().token("s3cret secret").build());
        Check.that(!e.getMessage().contains("s3cret"), "the message quotes the token: " + e.getMessage());
    }


    @Test
    void tokenSyntax() {
        String[] good = {"", "abc", "A-b.c_d~e+f/g", "abc=", "abc=="};
        String[] bad = {"=", "a b", "a=b", "é", "a\n"};
        for (String t : good) {
            Check.that(Settings.tokenSyntax(t), "refused " + t);
        }
        for (String t : bad) {
            Check.that(!Settings.tokenSyntax(t), "accepted " + t);
        }
    }

    @Test
    void builderHidesToken() {
        String s = base().token("s3cret-token").toString();
        Check.that(!s.contains("s3cret"), "toString shows the token: " + s);
        Check.contains(s, "[redacted]", "toString");
    }

    @Test
    void clientPrintsItsSettingsNotItsToken() {
        try (TicketdClient c = base().token("s3cret-token").build()) {
            String s = c.toString();
            Check.that(!s.contains("s3cret"), "the client's toString shows the token: " + s);
            Check.contains(s, "[redacted]", "the client's toString");
            Check.contains(s, "http://127.0.0.1:1", "the client's toString");
        }
    }

    @Test
    void sequenceNames() {
        String[] good = {"a", "orders", "a_1", "z".repeat(48)};
        String[] bad = {"", "A", "1a", "_a", "a-b", "a.b", "z".repeat(49), "ordérs"};
        for (String n : good) {
            Check.that(TicketdClient.validName(n), "refused " + n);
        }
        for (String n : bad) {
            Check.that(!TicketdClient.validName(n), "accepted " + n);
        }
    }
}
