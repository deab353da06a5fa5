package ticketd.client;

/**
 * The caller's own bound on waiting passed (the {@code maxWait} of
 * {@code next(Duration)} and the like), or the waiting thread was interrupted
 * (its interrupt status is then set again), while it waited for a refill.
 */
public final class WaitTimeoutException extends TicketdException {
    private static final long serialVersionUID = 1L;

    WaitTimeoutException(String message, Throwable cause) {
        super(message, cause);
    }
}
