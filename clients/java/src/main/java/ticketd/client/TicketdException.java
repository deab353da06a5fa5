package ticketd.client;

/**
 * The base of every exception the client throws for ticketd's sake (the
 * others are {@link IllegalArgumentException} for a bad name or setting and
 * {@link NullPointerException} for a null argument). Unchecked: a caller that
 * cannot get an ID usually cannot go on either, and a caller that can catches
 * the subclass it cares about.
 *
 * <p>{@link #filled()} tells how many values of an array a {@code fill} call
 * had filled when it failed: those values are valid and unique.
 */
public class TicketdException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private int filled;

    TicketdException(String message) {
        super(message);
    }

    TicketdException(String message, Throwable cause) {
        super(message, cause);
    }

    /** Values of the array a {@code fill} call filled before it failed (0 for a single value). */
    public int filled() {
        return filled;
    }

    TicketdException withFilled(int n) {
        filled = n;
        return this;
    }

    /**
     * A copy for the caller that is about to throw it: the refill thread
     * records one failure, and every caller that waited for that refill throws
     * an exception of its own (its own stack, the same message), caused by it.
     */
    TicketdException forCaller() {
        TicketdException e = new TicketdException(getMessage(), this);
        return e;
    }
}
