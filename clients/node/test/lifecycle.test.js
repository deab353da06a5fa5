// close, waits with a bound or a signal, what the process keeps alive.
import { test } from 'node:test';
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import { Client, ClosedError, WaitTimeoutError } from '../src/index.js';
import { FakeTicketd, A, sleep, eventually } from './fake.js';

test('close rejects waiting calls', async () => {
  const a = await FakeTicketd.start(A);
  try {
    const c = new Client({ endpoints: [a.url] });
    await c.next();
    await c.ticket('orders');
    a.delayMs = 5000;
    const waiting = (async () => { for (;;) await c.next(); })().then(() => null, (e) => e);
    await eventually(5000, 'the caller waits', () => c.stats().ids.waits >= 2);
    const t0 = performance.now();
    await c.close();
    const err = await waiting;
    assert.ok(err instanceof ClosedError, `the waiting caller got ${err}`);
    assert.ok(performance.now() - t0 < 1000);
    await assert.rejects(c.next(), ClosedError);
    assert.throws(() => c.tryNext(), ClosedError);
    await assert.rejects(c.ticket('orders'), ClosedError);
    assert.throws(() => c.sequence('other'), ClosedError);
    await c.close(); // idempotent
  } finally {
    await a.close();
  }
});

/**
 * Runs script in a Node process of its own (the fake server stays in this
 * one, so that its sockets and timers are not counted), with the client's
 * module, the endpoint's URL and env in its environment; resolves to its exit
 * status, standard output and how long it ran.
 */
function child(script, url, env = {}) {
  return new Promise((resolve) => {
    const t0 = performance.now();
    const p = spawn(process.execPath, ['--input-type=module', '-e', script], {
      env: { ...process.env, ...env, TICKETD_URL: url, CLIENT: new URL('../src/index.js', import.meta.url).href },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    const kill = setTimeout(() => p.kill('SIGKILL'), 15_000);
    p.on('exit', (code, sig) => {
      clearTimeout(kill);
      resolve({ code: code ?? sig, out, ms: performance.now() - t0 });
    });
  });
}

test('every socket and timer has ended when close resolves', async () => {
  const a = await FakeTicketd.start(A);
  const slow = await FakeTicketd.start(A);
  slow.delayMs = 5000;
  try {
    // Connections kept alive to one endpoint; a request in flight to the
    // other, which holds its answers, and its probes.
    const r = await child(`
      const { Client } = await import(process.env.CLIENT);
      void process.stderr; // created on first use, by a socket's destroy among others
      await new Promise((r) => setTimeout(r, 20)); // the import's own file reads have ended
      const before = process.getActiveResourcesInfo();
      const c = new Client({ endpoints: [process.env.TICKETD_URL], probeEvery: 10 });
      await c.next();
      await c.ticket('orders');
      const held = new Client({ endpoints: [process.env.SLOW_URL], callTimeout: 5000, maxAge: 10000 });
      await new Promise((r) => setTimeout(r, 100)); // its first request is sent
      await c.close();
      await held.close();
      const after = process.getActiveResourcesInfo(); // at once: nothing may be left to end
      console.log(JSON.stringify({ before, after }));
    `, a.url, { SLOW_URL: slow.url });
    assert.equal(r.code, 0);
    const { before, after } = JSON.parse(r.out);
    assert.deepEqual(after, before, 'resources when close resolved, and before the client');
  } finally {
    await a.close();
    await slow.close();
  }
});

test('an idle client does not keep the process alive', async () => {
  const a = await FakeTicketd.start(A);
  try {
    // No close: once its requests are answered, nothing of the client's
    // holds the event loop, and the process ends by itself.
    const r = await child(`
      const { Client } = await import(process.env.TICKETD_URL && process.env.CLIENT);
      const c = new Client({ endpoints: [process.env.TICKETD_URL] });
      console.log(String(await c.next()));
    `, a.url);
    assert.equal(r.code, 0);
    assert.ok(BigInt(r.out.trim()) >= A);
    assert.ok(r.ms < 10_000, `the process ran ${r.ms} ms`);
  } finally {
    await a.close();
  }
});

test('a call waits no longer than its timeout or its signal', async () => {
  const a = await FakeTicketd.start(A);
  const c = new Client({ endpoints: [a.url] });
  try {
    await c.next();
    await c.nextN(15); // the first batch of 16, spent
    a.delayMs = 2000;
    await sleep(50);
    const t0 = performance.now();
    const err = await (async () => { for (let i = 0; i < 100_000; i++) await c.next({ timeout: 100 }); })().then(() => null, (e) => e);
    assert.ok(err instanceof WaitTimeoutError, `got ${err}`);
    assert.ok(performance.now() - t0 < 1500);
    const partial = await c.nextN(100_000, { timeout: 50 }).then(() => null, (e) => e);
    assert.ok(partial instanceof WaitTimeoutError && Array.isArray(partial.values) && partial.values.length < 100_000);
    const ac = new AbortController();
    setTimeout(() => ac.abort(new Error('caller gave up')), 50);
    await assert.rejects(c.nextN(100_000, { signal: ac.signal }), /caller gave up/);
  } finally {
    await c.close();
    await a.close();
  }
});

