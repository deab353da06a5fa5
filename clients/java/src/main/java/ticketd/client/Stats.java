package ticketd.client;

import java.time.Duration;
import java.util.List;
import java.util.Map;

/**
 * The client's counters, for an application to export (Prometheus counters and
 * gauges map one to one). Counters only grow.
 *
 * @param ids       next and fill
 * @param sequences ticket and tickets, by sequence name
 * @param endpoints in the configured order
 */
public record Stats(StreamStats ids, Map<String, StreamStats> sequences, List<EndpointStats> endpoints) {

    /**
     * The counters of one buffer: the IDs, or one sequence.
     *
     * @param served             values handed out
     * @param fetched            values received from ticketd
     * @param buffered           values in the buffer now (gauge)
     * @param batch              values the next refill asks for (gauge)
     * @param refills            refills that brought a batch
     * @param refillFailures     refills that ended without values: every endpoint failed, ticketd rejected the
     *                           request, or it was over the token's quota
     * @param throttled          refills answered 429 (over the token's quota; counted in refillFailures too)
     * @param refillLatencyTotal time the successful refills took, from sending to having the values
     * @param refillLatencyMax   the longest of them
     * @param droppedByAge       IDs dropped, not handed out, for being older than maxAge
     * @param waits              calls that found the buffer empty and waited for a refill
     * @param lastError          the last refill's error, "" after a success
     */
    public record StreamStats(long served, long fetched, long buffered, int batch, long refills, long refillFailures,
            long throttled, Duration refillLatencyTotal, Duration refillLatencyMax, long droppedByAge, long waits,
            String lastError) {}

    /**
     * One ticketd endpoint (docs/client.md, "Stats").
     *
     * @param url            its base URL
     * @param up             false: skipped until a probe finds it ready
     * @param current        the endpoint refills try first
     * @param requests       batches asked for, whatever their outcome
     * @param failures       of those, failed for the endpoint's sake: refused, reset, out of time, a 5xx, a bad answer
     * @param rejected       of those, refused with a 4xx (429 included): the request's fault, never a failure
     * @param probes         GET /readyz while skipped
     * @param lastError      of the last failure; "" if none failed (a 4xx never changes it)
     * @param lastProbeError of the last probe, while they keep failing
     */
    public record EndpointStats(String url, boolean up, boolean current, long requests, long failures, long rejected, long probes,
            String lastError, String lastProbeError) {}
}
