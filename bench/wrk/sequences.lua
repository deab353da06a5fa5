-- wrk -s sequences.lua URL -- N: GET /v1/tickets/{name} over the named
-- sequences s000001 … sN (bench/sequences.sh creates them), a name drawn at
-- random for every request. After the run, the RESULT line of result.lua.
local n = 100
local threads = 0

-- Runs in the main state, once per thread: each thread gets its number as
-- the global id, to seed its own random names.
setup = function(thread)
  threads = threads + 1
  thread:set("id", threads)
end

init = function(args)
  n = tonumber(args[1]) or n
  math.randomseed(os.time() * 1000 + (id or 0))
end

request = function()
  return wrk.format("GET", string.format("/v1/tickets/s%06d", math.random(1, n)))
end

done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    "RESULT requests=%d duration_us=%d bytes=%d errors=%d non2xx=%d p50_us=%d p90_us=%d p99_us=%d p999_us=%d mean_us=%.1f max_us=%d\n",
    summary.requests, summary.duration, summary.bytes,
    e.connect + e.read + e.write + e.timeout, e.status,
    latency:percentile(50), latency:percentile(90), latency:percentile(99),
    latency:percentile(99.9), latency.mean, latency.max))
end
