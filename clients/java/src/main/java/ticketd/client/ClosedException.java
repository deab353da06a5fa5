package ticketd.client;

/** The client was closed: calls after {@link TicketdClient#close()}, and calls that were waiting for a refill then. */
public final class ClosedException extends TicketdException {
    private static final long serialVersionUID = 1L;

    ClosedException() {
        super("ticketd: client closed");
    }

    @Override
    ClosedException forCaller() {
        return new ClosedException();
    }
}
