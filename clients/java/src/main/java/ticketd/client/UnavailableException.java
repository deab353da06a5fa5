package ticketd.client;

/**
 * Nothing was buffered and no endpoint could issue: a refill that ended while
 * the call waited tried every endpoint and failed. The message names each
 * endpoint's state and last error; {@link #getSuppressed()} holds those
 * errors. IDs already buffered are still handed out until {@code maxAge}.
 */
public final class UnavailableException extends TicketdException {
    private static final long serialVersionUID = 1L;

    UnavailableException(String message) {
        super(message);
    }

    @Override
    UnavailableException forCaller() {
        UnavailableException e = new UnavailableException(getMessage());
        e.initCause(this);
        for (Throwable t : getSuppressed()) {
            e.addSuppressed(t);
        }
        return e;
    }
}
