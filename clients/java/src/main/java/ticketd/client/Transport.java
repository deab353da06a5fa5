package ticketd.client;

/**
 * What the client needs of the network: a batch of values from one endpoint,
 * and a readiness probe. The HTTP one is the only real one; tests use an
 * in-memory one.
 */
interface Transport {
    /**
     * Asks endpoint base for n values of path (/v1/ids or /v1/tickets/NAME,
     * perhaps with ?after=X) within timeoutNanos, and returns the answer's
     * body: exactly 8·n bytes, or an exception.
     */
    byte[] get(String base, String path, int n, long timeoutNanos) throws Exception;

    /** Returns normally when base answers GET /readyz with 200 within timeoutNanos. */
    void probe(String base, long timeoutNanos) throws Exception;

    /** Cancels every request in flight and releases connections the transport owns. */
    void close();
}
