package ticketd.client;

import java.time.Duration;

/**
 * ticketd refused the request itself (a 4xx answer): an unknown or exhausted
 * sequence, a batch above its {@code -max-batch}, no token or an unknown one
 * (401), a token without the scope (403). Asking another ticketd would not
 * help, so it is not retried elsewhere. Over a token's quota (429) is not
 * thrown: the client is paced instead (see the package documentation).
 */
public final class RejectedException extends StatusException {
    private static final long serialVersionUID = 1L;

    RejectedException(String endpoint, int status, String serverMessage, Duration retryAfter) {
        super(endpoint, status, serverMessage, retryAfter);
    }
}
