// Tokens, TLS, a token's quota (429), strictly increasing IDs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { format, inspect } from 'node:util';
import { Client, RejectedError, UnavailableError } from '../src/index.js';
import { FakeTicketd, A, eventually, sleep } from './fake.js';

test('no printed form of a client holds its token', async () => {
  const c = new Client({ endpoints: ['http://127.0.0.1:1'], token: 's3cret-token' });
  try {
    for (const out of [inspect(c), inspect(c, { depth: Infinity, showHidden: true }), format('%o', c), format('%O', c),
      format('%s', c), format('%j', c), String(c), JSON.stringify(c), inspect(c.sequence('orders'), { depth: Infinity })]) {
      assert.ok(!out.includes('s3cret'), `printed: ${out}`);
      assert.ok(out.includes('http://127.0.0.1:1'), `printed without its endpoint: ${out}`);
    }
    assert.match(inspect(c), /\[redacted\]/);
  } finally {
    await c.close();
  }
});

test('the token goes with value requests, not probes', async () => {
  const a = await FakeTicketd.start(A);
  a.token = 's3cret-token';
  try {
    const c = new Client({ endpoints: [a.url], token: 's3cret-token' });
    await c.next();
    await c.ticket('orders');
    for (const r of a.valueRequests()) assert.equal(r.auth, 'Bearer s3cret-token', r.path);
    await c.close();
    const none = new Client({ endpoints: [a.url] });
    const e1 = await none.next().then(() => null, (e) => e);
    assert.ok(e1 instanceof RejectedError && e1.status === 401, `got ${e1}`);
    await none.close();
    const other = new Client({ endpoints: [a.url], token: 'other' });
    const e2 = await other.next().then(() => null, (e) => e);
    assert.ok(e2 instanceof RejectedError && e2.status === 403, `got ${e2}`);
    assert.ok(!e2.message.includes('other'));
    await other.close();
  } finally {
    await a.close();
  }
  const a2 = await FakeTicketd.start(A);
  const b2 = await FakeTicketd.start(A);
  const c2 = new Client({ endpoints: [a2.url, b2.url], token: 's3cret-token', probeEvery: 20 });
  try {
    a2.status = 503;
    a2.ready = false;
    await c2.next();
    await eventually(3000, 'a probe', () => a2.requests.some((r) => r.path === '/readyz'));
    for (const r of a2.requests.filter((q) => q.path === '/readyz')) assert.equal(r.auth, undefined);
  } finally {
    await c2.close();
    await a2.close();
    await b2.close();
  }
});

test('over the quota the caller is paced, not failed', async () => {
  const a = await FakeTicketd.start(A);
  a.status = 429;
  a.retryAfter = '1';
  a.statusTimes = 1;
  const c = new Client({ endpoints: [a.url] });
  try {
    const t0 = performance.now();
    await c.next();
    const ms = performance.now() - t0;
    assert.ok(ms >= 900, `the first ID came after ${ms} ms, want the Retry-After of 1 s`);
    assert.equal(c.stats().ids.throttled, 1);
    const rs = a.valueRequests();
    assert.ok(rs[1].at - rs[0].at >= 900, 'asked again before the Retry-After');
  } finally {
    await c.close();
    await a.close();
  }
});

test('TLS with a CA of its own', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'ticketd-tls-'));
  try {
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
      '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '2',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'ca.pem')], { stdio: 'ignore' });
    const ca = readFileSync(join(dir, 'ca.pem'));
    const a = await FakeTicketd.start(A, { key: readFileSync(join(dir, 'key.pem')), cert: ca });
    try {
      const c = new Client({ endpoints: [a.url], ca });
      assert.ok((await c.next()) >= A);
      await c.close();
      const untrusting = new Client({ endpoints: [a.url], callTimeout: 400 });
      const err = await untrusting.next().then(() => null, (e) => e);
      assert.ok(err instanceof UnavailableError, `got ${err}`);
      assert.match(err.message, /certificate/i);
      await untrusting.close();
    } finally {
      await a.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

const LOW = 1n << 30n, HIGH = 1n << 50n;

async function increasingAcrossSwitch(strict) {
  const a = await FakeTicketd.start(HIGH);
  const b = await FakeTicketd.start(LOW);
  const c = new Client({ endpoints: [a.url, b.url], strictlyIncreasing: strict, maxAge: 2000 });
  try {
    let prev = 0n, increasing = true;
    const take = async () => { const v = await c.next(); increasing &&= v > prev; prev = v; };
    for (let i = 0; i < 5000; i++) await take();
    a.status = 503;
    a.ready = false;
    await eventually(5000, 'moved to the second endpoint', async () => {
      await take();
      return c.stats().endpoints[1].current && c.stats().ids.buffered > 0;
    });
    for (let i = 0; i < 5000; i++) await take();
    if (strict) {
      assert.ok(b.valueRequests().some((r) => r.query.after !== undefined && BigInt(r.query.after) >= HIGH),
        "no after= with the first endpoint's IDs");
    }
    return increasing;
  } finally {
    await c.close();
    await a.close();
    await b.close();
  }
}

test('strictly increasing across a switch', async () => {
  assert.ok(await increasingAcrossSwitch(true), 'strictly increasing IDs decreased across a switch');
  assert.ok(!(await increasingAcrossSwitch(false)), 'plain IDs kept increasing across a switch to smaller ones');
});

test('strictly increasing refuses IDs at or below after=', async () => {
  const a = await FakeTicketd.start(HIGH);
  const b = await FakeTicketd.start(LOW);
  const c = new Client({ endpoints: [a.url, b.url], strictlyIncreasing: true, maxAge: 100 });
  try {
    await c.next();
    await a.close();
    b.body = (n) => {
      const buf = Buffer.alloc(8 * n);
      for (let i = 0; i < n; i++) buf.writeBigInt64BE(LOW + BigInt(i) + 1n, 8 * i);
      return buf;
    };
    await sleep(150);
    const err = await (async () => {
      for (let i = 0; i < 100_000; i++) {
        const v = await c.next();
        if (v < HIGH) assert.fail(`an ID below after= handed out: ${v}`);
      }
    })().then(() => null, (e) => e);
    assert.ok(err instanceof UnavailableError, `got ${err}`);
    assert.match(err.message, /asked for after/);
  } finally {
    await c.close();
    await b.close();
  }
});
