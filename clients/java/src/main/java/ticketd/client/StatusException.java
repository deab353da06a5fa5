package ticketd.client;

import java.time.Duration;

/**
 * An answer other than 200 from ticketd. A 4xx is a {@link RejectedException};
 * a 5xx (ticketd cannot issue right now) only ever appears among the causes of
 * an {@link UnavailableException}, since the client tries the other endpoints.
 */
public class StatusException extends TicketdException {
    private static final long serialVersionUID = 1L;

    private final String endpoint;
    private final int status;
    private final String serverMessage;
    private final Duration retryAfter;

    StatusException(String endpoint, int status, String serverMessage, Duration retryAfter) {
        super("ticketd: " + endpoint + " answered " + status + ": " + serverMessage);
        this.endpoint = endpoint;
        this.status = status;
        this.serverMessage = serverMessage;
        this.retryAfter = retryAfter;
    }

    static StatusException of(String endpoint, int status, String serverMessage, Duration retryAfter) {
        if (status >= 400 && status < 500) {
            return new RejectedException(endpoint, status, serverMessage, retryAfter);
        }
        return new StatusException(endpoint, status, serverMessage, retryAfter);
    }

    /** The endpoint's base URL. */
    public String endpoint() {
        return endpoint;
    }

    /** The HTTP status. */
    public int status() {
        return status;
    }

    /** ticketd's {@code {"error": …}}, or the start of the body. */
    public String serverMessage() {
        return serverMessage;
    }

    /** The answer's {@code Retry-After} (whole seconds, at most a minute); zero without one. */
    public Duration retryAfter() {
        return retryAfter;
    }

    @Override
    StatusException forCaller() {
        StatusException e = of(endpoint, status, serverMessage, retryAfter);
        e.initCause(this);
        return e;
    }
}
