package ticketd.client;

/**
 * An endpoint answered something that is not a batch in the binary format
 * (wrong length, type or order), or, with {@code strictlyIncreasing}, IDs not
 * above the {@code after=} asked for. The endpoint is skipped like one that
 * failed; the exception appears among the causes of an
 * {@link UnavailableException}.
 */
public final class BadAnswerException extends TicketdException {
    private static final long serialVersionUID = 1L;

    BadAnswerException(String message) {
        super("ticketd: malformed answer: " + message);
    }
}
