-- wrk -s result.lua: after the run, one line that bench/run.sh parses.
-- Latencies are in microseconds; errors counts connect, read, write and
-- timeout errors; non2xx counts answers with a status other than 2xx/3xx.
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes=%d errors=%d non2xx=%d p50_us=%d p90_us=%d p99_us=%d p999_us=%d mean_us=%.1f max_us=%d\n",
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.mean, latency.max))
end
