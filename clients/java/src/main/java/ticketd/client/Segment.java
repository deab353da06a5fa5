package ticketd.client;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;

/**
 * One batch from one endpoint: the answer's bytes as ticketd sent them (8 per
 * value, big-endian), read in place. Callers claim values by incrementing pos
 * atomically, so two callers never get the same index; the one that retires
 * the segment claims everything left in one step (see Stream).
 */
final class Segment {
    static final VarHandle POS;
    private static final VarHandle BE_LONG =
            MethodHandles.byteArrayViewVarHandle(long[].class, ByteOrder.BIG_ENDIAN);

    static {
        try {
            POS = MethodHandles.lookup().findVarHandle(Segment.class, "pos", long.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    /** No values: the head of a stream with nothing buffered. */
    static final Segment EMPTY = new Segment(new byte[0], Long.MAX_VALUE);

    final byte[] body;
    final int len; // values
    /** On the client's clock; meaningful for IDs only (sequences never age). */
    final long expires;

    /** The next index to hand out; at or past len when the segment is spent or retired. */
    volatile long pos;
    /**
     * The index whose taker tells the refill thread that the buffer fell below
     * its low-water mark; -1 for none.
     */
    volatile long trigger = -1;

    Segment(byte[] body, long expires) {
        this.body = body;
        this.len = body.length / 8;
        this.expires = expires;
    }

    long value(int i) {
        return (long) BE_LONG.get(body, i << 3);
    }

    /** Values left to claim. */
    int left() {
        long p = pos;
        return p >= len ? 0 : (int) (len - p);
    }
}
