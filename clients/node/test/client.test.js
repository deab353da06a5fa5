// The buffer: unique values in order, batch sizes, age, sequences, the sync path.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Client, BadNameError, BadConfigError } from '../src/index.js';
import { FakeTicketd, A, sleep, eventually } from './fake.js';

test('unique and increasing across concurrent callers', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url] });
  try {
    const callers = 8, each = 20_000;
    const got = await Promise.all(Array.from({ length: callers }, async (_, k) => {
      const mine = [];
      if (k % 2 === 1) {
        for (let i = 0; i < each; i += 500) mine.push(...await c.nextN(500));
      } else {
        for (let i = 0; i < each; i++) mine.push(await c.next());
      }
      return mine;
    }));
    const all = new Set();
    for (const mine of got) {
      for (let i = 0; i < mine.length; i++) {
        assert.ok(!all.has(mine[i]), `ID ${mine[i]} handed out twice`);
        all.add(mine[i]);
        if (i > 0 && mine[i] <= mine[i - 1]) assert.fail(`a caller's IDs decreased: ${mine[i - 1]} then ${mine[i]}`);
      }
    }
    assert.equal(all.size, callers * each);
    const st = c.stats().ids;
    assert.equal(st.served, callers * each);
    assert.equal(st.fetched, st.served + st.buffered + st.droppedByAge);
  } finally {
    await c.close();
    await f.close();
  }
});

test('batches grow while IDs are taken fast', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url] });
  try {
    let prev = 0n;
    for (let i = 0; i < 100_000; i++) {
      const v = await c.next();
      if (v <= prev) assert.fail(`IDs decreased: ${prev} then ${v}`);
      prev = v;
    }
    const rs = f.valueRequests();
    assert.equal(rs[0].n, 16, 'first batch');
    for (let i = 1; i < rs.length; i++) {
      const n = rs[i].n, before = rs[i - 1].n;
      assert.ok([before, 2 * before, Math.floor(before / 2), 16, 10000].includes(n), `batch ${before} then ${n}`);
    }
    const max = Math.max(...rs.map((r) => r.n));
    assert.ok(max >= 1024, `largest batch ${max}`);
  } finally {
    await c.close();
    await f.close();
  }
});

test('batches shrink when slowly used', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url], minBatch: 16, maxBatch: 128, maxAge: 10_000, batchPeriod: 100 });
  try {
    await c.nextN(5000);
    const grown = c.stats().ids.batch;
    assert.ok(grown > 16, `batch ${grown} after a fast take`);
    for (let i = 0; i < 300; i++) { // 100 IDs/s: a batch of 32 or more lasts longer than 2 × 100 ms
      await c.next();
      await sleep(10);
    }
    const shrunk = c.stats().ids.batch;
    assert.ok(shrunk < grown, `batch ${shrunk} after slow use, want below ${grown}`);
  } finally {
    await c.close();
    await f.close();
  }
});

test('IDs older than maxAge are dropped', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url], minBatch: 1000 });
  try {
    const first = await c.next();
    const fetchedBelow = f.nextId;
    await sleep(1300);
    assert.equal(c.tryNext(), undefined, 'an ID older than maxAge from the sync path');
    const later = await c.next();
    assert.ok(later >= fetchedBelow, `ID ${later} after maxAge, want one fetched later (>= ${fetchedBelow})`);
    assert.ok(later > first);
    assert.ok(c.stats().ids.droppedByAge >= 998, `droppedByAge ${c.stats().ids.droppedByAge}`);
  } finally {
    await c.close();
    await f.close();
  }
});

test('IDs age from the request that fetched them, not from its answer', async () => {
  // With a slow answer, the two differ by the answer's delay.
  const maxAge = 500;
  const delay = 300;
  const f = await FakeTicketd.start(A);
  f.delayMs = delay;
  const c = new Client({ endpoints: [f.url], maxAge, callTimeout: maxAge, minBatch: 1000, maxBatch: 1000 });
  try {
    const first = await c.next();
    // Past maxAge since the first batch was asked for (the fake saw the
    // request after the client sent it), not since it arrived.
    await sleep(Math.max(0, askedAt(f, first) + maxAge + 50 - performance.now()));
    const v = await c.next();
    const age = performance.now() - askedAt(f, v);
    assert.ok(age < maxAge, `ID ${v} handed out ${age.toFixed(0)} ms after its request (its answer took ${delay} ms), want under maxAge ${maxAge} ms`);
    assert.ok(c.stats().ids.droppedByAge > 0, 'no ID dropped for age');
  } finally {
    await c.close();
    await f.close();
  }
});

/** When the fake saw the request that fetched id (its IDs start at A and follow one another). */
function askedAt(f, id) {
  let first = A;
  for (const r of f.valueRequests()) {
    if (r.path !== '/v1/ids') continue;
    if (id < first + BigInt(r.n)) return r.at;
    first += BigInt(r.n);
  }
  throw new Error(`no request fetched ${id}`);
}

test('a client in use is refreshed before its IDs expire', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url], maxAge: 200, minBatch: 1000, maxBatch: 1000 });
  try {
    await c.next();
    for (let i = 0; i < 40; i++) {
      await sleep(20);
      await c.next();
    }
    const st = c.stats().ids;
    assert.ok(st.refills >= 3, `refills ${st.refills}`);
    assert.ok(st.waits <= 2, `calls waited ${st.waits} times`);
  } finally {
    await c.close();
    await f.close();
  }
});

test('a client nobody calls sends nothing', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url], maxAge: 200 });
  try {
    await eventually(5000, 'first batch', () => c.stats().ids.refills === 1);
    const n = f.valueRequests().length;
    await sleep(800);
    assert.equal(f.valueRequests().length, n);
  } finally {
    await c.close();
    await f.close();
  }
});

test('tryNext hands out the buffer, then undefined', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url], minBatch: 100, maxBatch: 100 });
  try {
    await eventually(5000, 'first batch', () => c.stats().ids.buffered === 100);
    const got = [];
    for (let v = c.tryNext(); v !== undefined; v = c.tryNext()) got.push(v);
    assert.equal(got.length, 100);
    assert.deepEqual(got, [...got].sort((a, b) => (a < b ? -1 : 1)));
    assert.ok(typeof (await c.next()) === 'bigint');
  } finally {
    await c.close();
    await f.close();
  }
});

test('sequences', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url], maxTicketBatch: 50 });
  try {
    const s = c.sequence('orders');
    assert.equal(s, c.sequence('orders'));
    assert.equal(s.name, 'orders');
    const seen = new Set();
    for (let i = 0; i < 500; i++) {
      const v = await s.next();
      assert.ok(!seen.has(v), `repeat ${v}`);
      seen.add(v);
    }
    for (const v of await c.tickets('orders', 300)) {
      assert.ok(!seen.has(v));
      seen.add(v);
    }
    seen.add(await c.ticket('orders'));
    assert.equal(seen.size, 801);
    for (const r of f.valueRequests().filter((q) => q.path.startsWith('/v1/tickets/'))) {
      assert.equal(r.path, '/v1/tickets/orders');
      assert.ok(r.n >= 1 && r.n <= 50, `ticket batch ${r.n}`);
    }
    assert.equal(c.stats().sequences.orders.served, 801);
  } finally {
    await c.close();
    await f.close();
  }
});

test('a bad name sends nothing', async () => {
  const f = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [f.url] });
  try {
    await assert.rejects(c.ticket('Orders; DROP'), BadNameError);
    assert.throws(() => c.sequence('a'.repeat(49)), (e) => e.code === 'TICKETD_BAD_NAME');
    await sleep(50);
    assert.ok(f.requests.every((r) => !r.path.startsWith('/v1/tickets')));
  } finally {
    await c.close();
    await f.close();
  }
});

test('options: defaults and bounds', () => {
  const bad = [
    [{}, 'no endpoint'],
    [{ endpoints: [] }, 'no endpoint'],
    [{ endpoints: ['ftp://h:1'] }, 'http:// or https://'],
    [{ endpoints: ['http://h:1/?a=b'] }, 'without query'],
    [{ endpoints: ['http://u@h:1'] }, 'without query, fragment or user'],
    [{ endpoints: ['http://h:1', 'http://h:1/'] }, 'given twice'],
    [{ endpoints: ['http://h:1'], maxAge: 1 }, 'maxAge'],
    [{ endpoints: ['http://h:1'], maxAge: 7_200_000 }, 'maxAge'],
    [{ endpoints: ['http://h:1'], callTimeout: 2000 }, 'callTimeout'],
    [{ endpoints: ['http://h:1'], minBatch: 100, maxBatch: 10 }, 'minBatch'],
    [{ endpoints: ['http://h:1'], maxBatch: 2_000_000 }, 'maxBatch'],
    [{ endpoints: ['http://h:1'], minBatch: 1.5 }, 'minBatch'],
    [{ endpoints: ['http://h:1'], maxTicketBatch: -5 }, 'maxTicketBatch'],
    [{ endpoints: ['http://h:1'], batchPeriod: 600 }, 'batchPeriod'],
    [{ endpoints: ['http://h:1'], probeEvery: 1 }, 'probeEvery'],
    [{ endpoints: ['http://h:1'], maxAge: '1s' }, 'maxAge'],
    [{ endpoints: ['http://h:1'], token: 's3cret secret' }, 'token'],
  ];
  for (const [opts, want] of bad) {
    assert.throws(() => new Client(opts), (e) => e instanceof BadConfigError && e.message.includes(want), JSON.stringify(opts));
  }
  assert.throws(() => new Client({ endpoints: ['http://h:1'], token: 's3cret secret' }), (e) => !e.message.includes('s3cret'));
});
