// The Node client measured against ticketd, beside crypto.randomUUID and a
// plain HTTP call in the same process. Prints one "name value" line per
// figure (bench/clients.sh, make bench-clients, reads them):
//
//   clients_node_next_ns         one `await client.next()` from a warm buffer (the fastest of the iterations)
//   clients_node_trynext_ns      one `client.tryNext()` (sync) from a warm buffer
//   clients_node_uuid_ns         one crypto.randomUUID()
//   clients_node_http_ns         one GET /v1/id with node:http, kept alive
//   clients_node_sustained_ids_per_s  `await client.next()` for -d seconds, refills from ticketd included
//   clients_node_*_cpu_ns        next, tryNext and randomUUID in the process' CPU time
//   clients_node_major           Node's major version
//
// Each per-call figure also comes as CPU time (the _cpu_ns rows:
// process.cpuUsage over the same bursts), which a machine shared with other
// work disturbs less than the wall clock.
//
// A warm buffer: IDs are taken in bursts smaller than what the client keeps
// buffered, and only the bursts are timed, as for the Go and Java clients.
//
// Usage: node bench.js -url BASE [-d SECONDS] [-iterations N]
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { Client } from '../src/index.js';

const args = process.argv.slice(2);
const arg = (name, def) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : def;
};
const url = arg('-url');
const d = Number(arg('-d', '8'));
const iterations = Number(arg('-iterations', '3'));
if (!url) {
  console.error('usage: node bench.js -url BASE [-d SECONDS] [-iterations N]');
  process.exit(2);
}

const BURST = 5000;
let sink = 0n;
let lastCpuNs = 0;
const cpuNs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) * 1000;
};
const now = () => performance.now();

/** Waits until the buffer holds more than two bursts, in batches of two bursts or more. */
async function warm(c) {
  const end = now() + 60_000;
  while (now() < end) {
    const st = c.stats().ids;
    if (st.buffered > 2 * BURST && st.batch >= 2 * BURST) return;
    if (st.batch >= 2 * BURST) {
      // The batch has grown: one value a millisecond, so that the buffer is
      // in use (its refills go on) and the refills fill it. Taking bursts
      // meanwhile races them, and at the generator's ceiling (4.1 M IDs/s)
      // a quiet machine's loop takes them as fast as they come.
      await c.nextN(1);
      await new Promise((r) => setTimeout(r, 1));
      continue;
    }
    await c.nextN(Math.max(1, Math.min(BURST, st.buffered)));
    await new Promise((r) => setImmediate(r));
  }
  throw new Error(`no warm buffer within a minute: ${JSON.stringify(c.stats().ids)}`);
}

async function burstsNs(c, ms, sync) {
  let timed = 0, cpu = 0, n = 0, x = 0n;
  const end = now() + ms;
  while (now() < end) {
    await warm(c);
    const c0 = cpuNs();
    const t0 = process.hrtime.bigint();
    if (sync) {
      for (let i = 0; i < BURST; i++) x ^= c.tryNext();
    } else {
      for (let i = 0; i < BURST; i++) x ^= await c.next();
    }
    timed += Number(process.hrtime.bigint() - t0);
    cpu += cpuNs() - c0;
    n += BURST;
  }
  sink ^= x;
  lastCpuNs = cpu / n;
  return timed / n;
}

function uuidNs(ms) {
  let n = 0, x = 0;
  const c0 = cpuNs();
  const t0 = process.hrtime.bigint();
  const end = now() + ms;
  while (now() < end) {
    for (let i = 0; i < 1000; i++) x ^= randomUUID().charCodeAt(35);
    n += 1000;
  }
  sink ^= BigInt(x);
  lastCpuNs = (cpuNs() - c0) / n;
  return Number(process.hrtime.bigint() - t0) / n;
}

async function httpNs(ms) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const get = () => new Promise((resolve, reject) => {
    http.get(`${url}/v1/id`, { agent }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => { body += c; });
      res.on('end', () => (res.statusCode === 200 ? resolve(BigInt(body.trim())) : reject(new Error(`GET /v1/id: ${res.statusCode} ${body}`))));
    }).on('error', reject);
  });
  for (let i = 0; i < 2000; i++) sink ^= await get();
  let n = 0;
  const t0 = process.hrtime.bigint();
  const end = now() + ms;
  while (now() < end) {
    sink ^= await get();
    n++;
  }
  const ns = Number(process.hrtime.bigint() - t0) / n;
  agent.destroy();
  return ns;
}

async function sustained(c, seconds) {
  let n = 0, x = 0n;
  const t0 = now();
  const end = t0 + seconds * 1000;
  while (now() < end) {
    for (let i = 0; i < 1024; i++) x ^= await c.next();
    n += 1024;
  }
  sink ^= x;
  return n / ((now() - t0) / 1000);
}

// The fastest of the iterations, as bench/clients.sh takes for every client.
const least = (v) => Math.min(...v);

const c = new Client({ endpoints: [url] });
try {
  for (let w = 0; w < 3; w++) {
    await burstsNs(c, 200, false);
    await burstsNs(c, 200, true);
    uuidNs(200);
  }
  const next = [], sync = [], uuid = [], nextCpu = [], syncCpu = [], uuidCpu = [];
  for (let it = 0; it < iterations; it++) { // interleaved, so that a noisy moment hits all three
    next.push(await burstsNs(c, 1000, false));
    nextCpu.push(lastCpuNs);
    sync.push(await burstsNs(c, 1000, true));
    syncCpu.push(lastCpuNs);
    uuid.push(uuidNs(1000));
    uuidCpu.push(lastCpuNs);
  }
  console.log(`clients_node_next_ns ${least(next).toFixed(1)}`);
  console.log(`clients_node_trynext_ns ${least(sync).toFixed(1)}`);
  console.log(`clients_node_uuid_ns ${least(uuid).toFixed(1)}`);
  console.log(`clients_node_next_cpu_ns ${least(nextCpu).toFixed(1)}`);
  console.log(`clients_node_trynext_cpu_ns ${least(syncCpu).toFixed(1)}`);
  console.log(`clients_node_uuid_cpu_ns ${least(uuidCpu).toFixed(1)}`);
  console.log(`clients_node_http_ns ${(await httpNs(2000)).toFixed(0)}`);
  console.log(`clients_node_sustained_ids_per_s ${(await sustained(c, d)).toFixed(0)}`);
  console.log(`clients_node_major ${process.versions.node.split('.')[0]}`);
} finally {
  await c.close();
}
console.error(`sink ${sink & 1n}`);
