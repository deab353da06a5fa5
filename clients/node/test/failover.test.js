// Endpoints: order, failover, probes, the all-down case, what is not retried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, RejectedError, UnavailableError } from '../src/index.js';
import { FakeTicketd, A, B, sleep, eventually } from './fake.js';

const fromB = (v) => v >= B;

async function pair(opts = {}) {
  const a = await FakeTicketd.start(A);
  const b = await FakeTicketd.start(B);
  const c = new Client({ endpoints: [a.url, b.url], ...opts });
  return { a, b, c, done: async () => { await c.close(); await a.close(); await b.close(); } };
}

test('fails over in order and stays', async () => {
  const { a, b, c, done } = await pair({ maxAge: 2000, probeEvery: 20 });
  try {
    assert.ok(!fromB(await c.next()), 'the first endpoint that works gives the IDs');
    a.status = 503;
    a.ready = false;
    await eventually(5000, 'IDs from the second endpoint', async () => fromB(await c.next()));
    assert.ok(!c.stats().endpoints[0].up);
    assert.match(c.stats().endpoints[0].lastError, /503/);
    assert.ok(c.stats().endpoints[1].current);
    a.status = 200;
    a.ready = true;
    await eventually(5000, 'the first endpoint rejoins', () => c.stats().endpoints[0].up);
    assert.ok(c.stats().endpoints[0].probes > 0);
    for (let i = 0; i < 20_000; i++) {
      if (!fromB(await c.next())) assert.fail('moved back to the first endpoint while the second works');
    }
    b.status = 500;
    await eventually(5000, 'IDs from the first endpoint again', async () => !fromB(await c.next()));
  } finally {
    await done();
  }
});

test('a killed endpoint is skipped', async () => {
  const dead = await FakeTicketd.start(A);
  await dead.close(); // its port now refuses
  const b = await FakeTicketd.start(B);
  const c = new Client({ endpoints: [dead.url, b.url] });
  try {
    for (let i = 0; i < 1000; i++) assert.ok(fromB(await c.next()));
    assert.match(c.stats().endpoints[0].lastError, /ECONNREFUSED/);
  } finally {
    await c.close();
    await b.close();
  }
});

test('a slow endpoint is skipped', async () => {
  const { a, c, done } = await pair({ callTimeout: 100 });
  try {
    a.delayMs = 3000;
    const t0 = performance.now();
    assert.ok(fromB(await c.next()));
    assert.ok(performance.now() - t0 < 2500, 'the slow endpoint was waited for');
    assert.match(c.stats().endpoints[0].lastError, /no answer within 100 ms/);
  } finally {
    await done();
  }
});

test('every endpoint down, then one back', async () => {
  const { a, b, c, done } = await pair({ maxAge: 100, probeEvery: 20 });
  try {
    await c.next();
    for (const f of [a, b]) {
      f.status = 503;
      f.ready = false;
    }
    await sleep(150);
    const err = await c.next().then(() => null, (e) => e);
    assert.ok(err instanceof UnavailableError, `got ${err}`);
    assert.ok(err.message.includes(a.url) && err.message.includes(b.url), err.message);
    assert.equal(err.errors.length, 2);
    assert.ok(c.stats().ids.refillFailures > 0);
    a.status = 200;
    a.ready = true;
    await eventually(5000, 'IDs again', async () => c.next().then(() => true, () => false));
  } finally {
    await done();
  }
});

test('buffered IDs outlive an outage', async () => {
  const a = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [a.url], minBatch: 5000, maxBatch: 5000, maxAge: 30_000 });
  try {
    await c.next();
    await eventually(5000, 'two batches', () => c.stats().ids.buffered >= 9000);
    await a.close();
    for (let i = 0; i < 8000; i++) await c.next();
    await assert.rejects(async () => { for (let i = 0; i < 10_000; i++) await c.next(); }, UnavailableError);
  } finally {
    await c.close();
  }
});

test('a rejection is not retried elsewhere', async () => {
  const { a, b, c, done } = await pair();
  try {
    const err = await c.ticket('nosuch').then(() => null, (e) => e);
    assert.ok(err instanceof RejectedError, `got ${err}`);
    assert.equal(err.status, 404);
    assert.match(err.serverMessage, /unknown sequence/);
    assert.equal(err.endpoint, a.url);
    assert.ok(b.valueRequests().every((r) => !r.path.startsWith('/v1/tickets')));
    const st = c.stats();
    const ea = st.endpoints[0];
    // The request's fault, not the endpoint's.
    assert.deepEqual([ea.up, ea.current, ea.failures, ea.rejected, ea.lastError], [true, true, 0, 1, ''], JSON.stringify(ea));
    assert.equal(st.sequences.nosuch.refillFailures, 1);
    assert.match(st.sequences.nosuch.lastError, /404/);
  } finally {
    await done();
  }
});

test('a call during a refill gets that refill\'s outcome', async () => {
  // Both endpoints hold their answers: a call that comes while the first
  // refill is under way fails once that refill has asked each endpoint with
  // callTimeout and then each with maxAge, not after another refill as well.
  const a = await FakeTicketd.start(A);
  const b = await FakeTicketd.start(B);
  a.delayMs = 5000;
  b.delayMs = 5000;
  const c = new Client({ endpoints: [a.url, b.url], callTimeout: 50, maxAge: 150, probeEvery: 5000 });
  try {
    await eventually(5000, 'the first refill asks', () => a.valueRequests().length >= 1);
    await assert.rejects(c.next({ timeout: 10_000 }), UnavailableError);
    const st = c.stats();
    assert.equal(st.ids.refillFailures, 1, 'refills failed when next rejected');
    for (const e of st.endpoints) assert.deepEqual([e.requests, e.failures], [2, 2], JSON.stringify(e));
  } finally {
    await c.close();
    await a.close();
    await b.close();
  }
});

test('malformed answers are skipped', async () => {
  const cases = [
    [(f) => { f.body = (n) => Buffer.alloc(8 * n - 1); }, /malformed answer/],
    [(f) => { f.contentType = 'text/plain'; }, /Content-Type/],
    [(f) => { f.body = (n) => Buffer.alloc(8 * n); }, /not a positive int64/],
  ];
  for (const [spoil, want] of cases) {
    const { a, c, done } = await pair();
    try {
      spoil(a);
      assert.ok(fromB(await c.next()));
      assert.match(c.stats().endpoints[0].lastError, want);
    } finally {
      await done();
    }
  }
});

test("a sequence's 503 keeps the endpoint for IDs", async () => {
  const { a, c, done } = await pair();
  try {
    await c.next();
    a.statusOnly = '/v1/tickets/';
    a.status = 503;
    a.statusTimes = 1;
    await c.ticket('orders');
    assert.ok(c.stats().endpoints[0].up);
  } finally {
    await done();
  }
});
