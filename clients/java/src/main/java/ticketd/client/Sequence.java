package ticketd.client;

import java.time.Duration;
import java.util.Objects;

/**
 * A named sequence's values ({@code GET /v1/tickets/NAME}), from a buffer of
 * its own: {@link TicketdClient#sequence(String)} returns the same handle for
 * a name every time. Values are unique, not ordered (the ticket servers
 * advance independently), never age, and fit a {@code long} (ticketd's
 * sequences stop below 2<sup>63</sup>). Values fetched and never handed out
 * are gaps, never repeats. Thread-safe; {@link #next()} takes no lock and
 * allocates nothing while values are buffered.
 */
public final class Sequence {
    private final Stream s;

    Sequence(Stream s) {
        this.s = s;
    }

    /** The sequence's name. */
    public String name() {
        return s.name;
    }

    /**
     * A value of the sequence: from the buffer, or after the next refill when
     * the buffer is empty.
     *
     * @throws UnavailableException nothing buffered and no endpoint could issue
     * @throws RejectedException    ticketd refused the request (an unknown sequence: 404; a token without the scope: 403)
     * @throws ClosedException      the client is closed
     * @throws WaitTimeoutException the waiting thread was interrupted
     */
    public long next() {
        return s.next(Stream.NO_DEADLINE);
    }

    /** {@link #next()}, waiting at most maxWait for a refill ({@link WaitTimeoutException} past it). */
    public long next(Duration maxWait) {
        return s.next(TicketdClient.deadline(maxWait));
    }

    /** Fills dst with values of the sequence; a {@link TicketdException}'s {@code filled()} says how many it filled before failing. */
    public void fill(long[] dst) {
        s.fill(Objects.requireNonNull(dst, "dst"), Stream.NO_DEADLINE);
    }

    /** {@link #fill(long[])}, waiting at most maxWait for refills in all. */
    public void fill(long[] dst, Duration maxWait) {
        s.fill(Objects.requireNonNull(dst, "dst"), TicketdClient.deadline(maxWait));
    }

    Stream stream() {
        return s;
    }

    @Override
    public String toString() {
        return "ticketd.client.Sequence[" + s.name + "]";
    }
}
