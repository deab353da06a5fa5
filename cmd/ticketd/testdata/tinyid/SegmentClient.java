// SegmentClient takes tinyid segments from ticketd's /tinyid/id/nextSegmentIdSimple
// and hands out their IDs the way tinyid's Java client does, for ticketd's
// tests (cmd/ticketd TestE2EPeers). The JDK alone: javac SegmentClient.java.
//
// The way tinyid's client does it: a segment is "currentId,loadingId,maxId,
// delta,remainder"; its IDs are the v of (currentId, maxId] with v % delta ==
// remainder, handed out from memory by adding delta to an atomic counter; once
// an ID reaches loadingId the next segment is fetched in the background; when
// the current one runs out the next takes its place, or one is fetched there
// and then. Every fetch POSTs to a server picked at random from the list, and
// a fetch that fails (no answer, an HTTP error, an empty answer) is not tried
// elsewhere: the caller that needed it gets an exception.
//
//   TINYID_TOKEN=TOKEN java SegmentClient SERVERS BIZ[,BIZ...] THREADS SECONDS OUTDIR
//
// The token comes from the environment, never the command line, which any
// user of the machine can read.
//
// Half the threads take IDs one at a time, the others in batches of 1 to 50,
// each from a biz type in turn, for SECONDS. A caller that gets an exception
// counts a failure and tries again 10 ms later. Each thread writes what it
// took to OUTDIR/t<N>.bin: per ID, one byte (the biz type's place in the
// list) and the ID (8 bytes, big-endian). A line on standard input moves to
// the next phase. At the end it prints, per phase, "phase P taken N failed F
// segments S".
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;

public final class SegmentClient {
    static final int PHASES = 8;
    static final AtomicInteger phase = new AtomicInteger();
    static final AtomicLongArray taken = new AtomicLongArray(PHASES);
    static final AtomicLongArray failed = new AtomicLongArray(PHASES);
    static final AtomicLongArray segments = new AtomicLongArray(PHASES);

    /** One segment: the IDs of (current, max] that leave rem modulo delta. */
    static final class Segment {
        final long max, loading;
        final int delta;
        final AtomicLong next;

        Segment(String answer) {
            String[] f = answer.trim().split(",");
            if (f.length != 5) {
                throw new IllegalStateException("not a segment: " + answer);
            }
            long current = Long.parseLong(f[0]);
            loading = Long.parseLong(f[1]);
            max = Long.parseLong(f[2]);
            delta = Integer.parseInt(f[3]);
            int rem = Integer.parseInt(f[4]);
            // The first ID above current of the residue, less one delta: the
            // first addAndGet gives it.
            long first = current + 1 + Math.floorMod(rem - (current + 1), (long) delta);
            next = new AtomicLong(first - delta);
        }
    }

    static final class Exhausted extends RuntimeException {
        Exhausted(String msg, Throwable cause) {
            super(msg, cause);
        }
    }

    /** The IDs of one biz type: the current segment and the next. */
    static final class Generator {
        final String biz;
        final String[] servers;
        final String token;
        volatile Segment current, next;
        final AtomicBoolean loading = new AtomicBoolean();
        final ExecutorService loader = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "segment-loader");
            t.setDaemon(true);
            return t;
        });

        Generator(String biz, String[] servers, String token) {
            this.biz = biz;
            this.servers = servers;
            this.token = token;
        }

        Segment fetch() {
            String server = servers[ThreadLocalRandom.current().nextInt(servers.length)];
            String url = "http://" + server + "/tinyid/id/nextSegmentIdSimple?token=" + token + "&bizType=" + biz;
            String answer;
            try {
                answer = post(url);
            } catch (IOException e) {
                throw new Exhausted("no segment of " + biz + " from " + server, e);
            }
            if (answer.isEmpty()) {
                throw new Exhausted("an empty answer for " + biz + " from " + server + ": refused", null);
            }
            segments.incrementAndGet(phase.get());
            return new Segment(answer);
        }

        void loadNext() {
            if (next != null || !loading.compareAndSet(false, true)) {
                return;
            }
            loader.submit(() -> {
                try {
                    next = fetch();
                } catch (RuntimeException e) {
                    // tinyid's client drops it too: the next ID past
                    // loadingId asks again.
                } finally {
                    loading.set(false);
                }
            });
        }

        synchronized void replace(Segment spent) {
            if (current != spent) {
                return; // another caller replaced it already
            }
            if (next != null) {
                current = next;
                next = null;
            } else {
                current = fetch();
            }
        }

        long nextId() {
            while (true) {
                Segment s = current;
                if (s == null) {
                    replace(null);
                    continue;
                }
                long id = s.next.addAndGet(s.delta);
                if (id > s.max) {
                    replace(s);
                    continue;
                }
                if (id >= s.loading) {
                    loadNext();
                }
                return id;
            }
        }
    }

    static String post(String url) throws IOException {
        HttpURLConnection c = (HttpURLConnection) new URL(url).openConnection();
        c.setRequestMethod("POST");
        c.setDoOutput(true);
        c.setConnectTimeout(2000);
        c.setReadTimeout(5000);
        c.setUseCaches(false);
        try (OutputStream os = c.getOutputStream()) {
            os.write(new byte[0]);
        }
        if (c.getResponseCode() != 200) {
            InputStream err = c.getErrorStream();
            if (err != null) {
                err.readAllBytes();
                err.close();
            }
            throw new IOException("HTTP " + c.getResponseCode());
        }
        try (InputStream in = c.getInputStream()) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    public static void main(String[] args) throws Exception {
        String token = System.getenv("TINYID_TOKEN");
        if (args.length != 5 || token == null || token.isEmpty()) {
            System.err.println("usage: TINYID_TOKEN=TOKEN java SegmentClient SERVERS BIZ[,BIZ...] THREADS SECONDS OUTDIR");
            System.exit(2);
        }
        String[] servers = args[0].split(",");
        String[] bizTypes = args[1].split(",");
        int threads = Integer.parseInt(args[2]);
        long until = System.nanoTime() + Long.parseLong(args[3]) * 1_000_000_000L;
        String outDir = args[4];
        Generator[] gens = new Generator[bizTypes.length];
        for (int i = 0; i < gens.length; i++) {
            gens[i] = new Generator(bizTypes[i], servers, token);
        }
        Thread phases = new Thread(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
                while (in.readLine() != null) {
                    phase.incrementAndGet();
                }
            } catch (IOException e) {
                // the test closed standard input
            }
        });
        phases.setDaemon(true);
        phases.start();
        Thread[] ts = new Thread[threads];
        for (int n = 0; n < threads; n++) {
            final int me = n;
            ts[n] = new Thread(() -> {
                try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(new FileOutputStream(outDir + "/t" + me + ".bin"), 1 << 16))) {
                    ThreadLocalRandom r = ThreadLocalRandom.current();
                    for (int k = 0; System.nanoTime() < until; k++) {
                        int b = (me + k) % gens.length;
                        int batch = me % 2 == 0 ? 1 : 1 + r.nextInt(50);
                        for (int i = 0; i < batch; i++) {
                            long id;
                            try {
                                id = gens[b].nextId();
                            } catch (Exhausted e) {
                                failed.incrementAndGet(phase.get());
                                Thread.sleep(10);
                                break;
                            }
                            out.writeByte(b);
                            out.writeLong(id);
                            taken.incrementAndGet(phase.get());
                        }
                    }
                } catch (IOException | InterruptedException e) {
                    throw new RuntimeException(e);
                }
            }, "caller-" + n);
            ts[n].start();
        }
        for (Thread t : ts) {
            t.join();
        }
        for (int p = 0; p <= Math.min(phase.get(), PHASES - 1); p++) {
            System.out.println("phase " + p + " taken " + taken.get(p) + " failed " + failed.get(p) + " segments " + segments.get(p));
        }
    }
}
