// The Node client's conformance adapter: speaks the protocol of
// clients/conformance/PROTOCOL.md on standard input and output, creating
// clients and calling them as the driver says. It uses the package's public
// API only, as an application does. "threads" are concurrent callers on the
// one event loop.
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { format, inspect } from 'node:util';
import {
  BadConfigError, BadNameError, Client, ClosedError, RejectedError, UnavailableError, WaitTimeoutError, version,
} from '../src/index.js';

// Standard output's and standard error's handles exist from the start. Node
// creates each on first use: stdout at the first answer, stderr when any
// socket is destroyed (net's Socket._destroy looks at process.stderr). A
// count taken before either would miss them, and every later count would
// look like a leak.
const out = process.stdout;
void process.stderr;
/** @type {Map<string, Client>} */
const clients = new Map();
/** @type {Map<string, {calls: number, done: Promise<object>}>} */
const jobs = new Map();

/** @param {unknown} e */
function errorOf(e) {
  let kind = 'bad_answer';
  let status = 0;
  if (e instanceof ClosedError) kind = 'closed';
  else if (e instanceof RejectedError) {
    kind = 'rejected';
    status = e.status;
  } else if (e instanceof UnavailableError) kind = 'unavailable';
  else if (e instanceof WaitTimeoutError) kind = 'timeout';
  else if (e instanceof BadNameError) kind = 'bad_name';
  else if (e instanceof BadConfigError) kind = 'bad_config';
  return { kind, message: String(/** @type {any} */ (e)?.message ?? e), status };
}

const fail = (/** @type {string} */ kind, /** @type {string} */ message) => ({ ok: false, error: { kind, message, status: 0 } });
// A call's times on the wall clock, which ticketd's IDs carry: Date.now(),
// whole milliseconds, the start rounded down and the end up, so that the
// driver's age and order checks never see a call shorter than it was.
// (performance.timeOrigin + performance.now() drifts from the wall clock: a
// start read so was a millisecond late, and an ID 100 ms old looked 101.)
const startMicros = () => Date.now() * 1000;
const endMicros = () => (Date.now() + 1) * 1000;
const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** @param {any} cfg */
function build(cfg) {
  const o = /** @type {import('../index.js').ClientOptions} */ ({
    endpoints: cfg.endpoints ?? [],
    maxAge: cfg.max_age_ms || undefined,
    callTimeout: cfg.call_timeout_ms || undefined,
    minBatch: cfg.min_batch || undefined,
    maxBatch: cfg.max_batch || undefined,
    maxTicketBatch: cfg.max_ticket_batch || undefined,
    batchPeriod: cfg.batch_period_ms || undefined,
    probeEvery: cfg.probe_every_ms || undefined,
    strictlyIncreasing: Boolean(cfg.strictly_increasing),
  });
  if (cfg.token) o.token = cfg.token;
  if (cfg.ca_file) o.ca = readFileSync(cfg.ca_file);
  return new Client(o);
}

/** A buffer's stats in the protocol's terms (Node's names are camelCase, latencies in ms). @param {any} s */
function streamOf(s) {
  return {
    served: s.served, fetched: s.fetched, buffered: s.buffered, batch: s.batch, refills: s.refills,
    refill_failures: s.refillFailures, throttled: s.throttled, refill_latency_total_ms: s.refillLatencyTotal,
    refill_latency_max_ms: s.refillLatencyMax, dropped_by_age: s.droppedByAge, waits: s.waits, last_error: s.lastError,
  };
}

/** @param {Client} c */
function statsOf(c) {
  const st = c.stats();
  /** @type {Record<string, object>} */
  const sequences = {};
  for (const [name, s] of Object.entries(st.sequences)) sequences[name] = streamOf(s);
  return {
    ids: streamOf(st.ids),
    sequences,
    endpoints: st.endpoints.map((/** @type {any} */ e) => ({
      url: e.url, up: e.up, current: e.current, requests: e.requests, failures: e.failures, rejected: e.rejected,
      probes: e.probes, last_error: e.lastError, last_probe_error: e.lastProbeError,
    })),
  };
}

/** Every way a Node program prints a client: console.log's, util.inspect's, JSON's. @param {Client} c */
function printed(c) {
  let json;
  try {
    json = JSON.stringify(c);
  } catch (e) {
    json = `JSON.stringify threw: ${e}`;
  }
  return [
    format('%s', c), format('%o', c), format('%O', c), format(c), inspect(c),
    inspect(c, { depth: Infinity, showHidden: true }), String(c), json,
  ];
}

/** @param {Client} c @param {any} r @param {{calls: number}} job */
async function run(c, r, job) {
  const timeout = r.timeout_ms > 0 ? r.timeout_ms : 10_000;
  const threads = Array.from({ length: r.threads ?? 0 }, () => /** @type {any} */ ({ values: [], ...(r.timed ? { times: [] } : {}), errors: [] }));
  await Promise.all(threads.map(async (th) => {
    for (let k = 1; k <= (r.count ?? 0); k++) {
      const before = startMicros();
      try {
        const v = r.op === 'next' ? await c.next({ timeout }) : await c.ticket(r.name, { timeout });
        const after = endMicros();
        th.values.push(String(v));
        if (r.timed) th.times.push([before, after]);
      } catch (e) {
        th.errors.push(errorOf(e));
      }
      job.calls++;
      if (r.pause_every > 0 && k % r.pause_every === 0) await sleep(r.pause_ms ?? 0);
    }
  }));
  return { ok: true, threads };
}

/** @param {any} r */
async function handle(r) {
  switch (r.op) {
    case 'hello':
      return { ok: true, language: 'node', resources_exact: true, client: `ticketd-client ${version} (Node ${process.version})` };
    case 'new': {
      if (!r.client || clients.has(r.client)) return fail('protocol', `client ${JSON.stringify(r.client)}: want a new name`);
      try {
        clients.set(r.client, build(r.config ?? {}));
      } catch (e) {
        return { ok: false, error: { ...errorOf(e), kind: 'bad_config' } };
      }
      return { ok: true };
    }
    case 'next':
    case 'ticket': {
      const c = clients.get(r.client);
      if (!c) return fail('protocol', `no client ${JSON.stringify(r.client)}`);
      if (r.job && jobs.has(r.job)) return fail('protocol', `job ${JSON.stringify(r.job)} twice`);
      const job = { calls: 0, done: /** @type {Promise<object>} */ (Promise.resolve({})) };
      job.done = run(c, r, job);
      if (!r.job) return job.done;
      jobs.set(r.job, job);
      return { ok: true };
    }
    case 'progress':
    case 'wait': {
      const job = jobs.get(r.job);
      if (!job) return fail('protocol', `no job ${JSON.stringify(r.job)}`);
      return r.op === 'progress' ? { ok: true, calls: job.calls } : job.done;
    }
    case 'close': {
      const c = clients.get(r.client);
      if (!c) return fail('protocol', `no client ${JSON.stringify(r.client)}`);
      await c.close();
      return { ok: true, count: process.getActiveResourcesInfo().length };
    }
    case 'resources':
      return { ok: true, count: process.getActiveResourcesInfo().length };
    case 'stats':
    case 'print': {
      const c = clients.get(r.client);
      if (!c) return fail('protocol', `no client ${JSON.stringify(r.client)}`);
      return r.op === 'stats' ? { ok: true, stats: statsOf(c) } : { ok: true, printed: printed(c) };
    }
    default:
      return fail('protocol', `unknown op ${JSON.stringify(r.op)}`);
  }
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  let ans;
  try {
    ans = await handle(JSON.parse(line));
  } catch (e) {
    ans = fail('protocol', String(e));
  }
  out.write(`${JSON.stringify(ans)}\n`);
}
await Promise.all([...jobs.values()].map((j) => j.done));
await Promise.all([...clients.values()].map((c) => c.close()));
