-- wrk -s after.lua URL -- EPOCH_MS: GET /v1/id, or, when URL's query has
-- after=, GET /v1/id?after=X with X an ID one millisecond old: worker 0,
-- sequence 0, the millisecond before this one by the wall clock, under a
-- layout of 41 time bits from EPOCH_MS (X = (ms - 1 - EPOCH_MS) * 2^22),
-- made again every millisecond. Both forms go through this same Lua call
-- per request, so that wrk's cost is the same on both sides of a pair.
-- After the run, the RESULT line of result.lua.
local ffi = require("ffi")
ffi.cdef [[
typedef struct { long tv_sec; long tv_nsec; } bench_timespec;
int clock_gettime(int clock, bench_timespec *ts);
]]
local CLOCK_REALTIME = 0
local ts = ffi.new("bench_timespec")

local epoch = 1288834974657 -- ticketd's default (-epoch), Twitter's
local after = false
local plain, req
local last = -1

init = function(args)
  epoch = tonumber(args[1]) or epoch
  after = string.find(wrk.path, "after=", 1, true) ~= nil
  plain = wrk.format("GET", "/v1/id")
  req = plain
end

request = function()
  ffi.C.clock_gettime(CLOCK_REALTIME, ts)
  local ms = tonumber(ts.tv_sec) * 1000 + math.floor(tonumber(ts.tv_nsec) / 1e6)
  if ms ~= last then
    last = ms
    if after then
      -- Below 2^61: exact in a double, printed whole by %.0f.
      req = wrk.format("GET", string.format("/v1/id?after=%.0f", (ms - 1 - epoch) * 4194304))
    end
  end
  return req
end

-- done: the RESULT line, from result.lua beside this file.
dofile((string.match(debug.getinfo(1, "S").source, "^@(.*/)") or "") .. "result.lua")
