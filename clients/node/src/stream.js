// One buffered source of values: the snowflake IDs, or one named sequence.
//
// The buffer is a queue of segments (batches). A call takes the next value of
// the head segment; an ID only while less than maxAge has passed since the
// request that fetched it was sent (performance.now, a monotonic clock). One
// refill loop per buffer keeps it above its low-water mark (one batch), with
// the Go client's algorithm: batch sizes that double or halve with how long
// the last batch lasted (Meituan Leaf's step), a refresh of IDs in use a
// quarter of maxAge before the freshest expire, the endpoints in order with
// failover, and a pause for a 429's Retry-After. Node runs one thing at a
// time, so no lock is needed: a call that takes a value runs to its end.
import { performance } from 'node:perf_hooks';
import { BadAnswerError, ClosedError, RejectedError, WaitTimeoutError } from './errors.js';
import { describe, skips } from './endpoints.js';

const NEVER = Infinity;

class Segment {
  /** @param {BigInt64Array | BigUint64Array} vals @param {number} expires */
  constructor(vals, expires) {
    this.vals = vals;
    this.pos = 0;
    this.expires = expires;
  }
}

/** A promise with its resolve function at hand. */
function signalled() {
  /** @type {() => void} */
  let resolve = () => {};
  const promise = new Promise((r) => { resolve = /** @type {() => void} */ (r); });
  return { promise, resolve };
}

export class Stream {
  /**
   * @param {import('./client.js').Client} c @param {string} name @param {string} path
   * @param {boolean} ids @param {number} minBatch @param {number} maxBatch
   */
  constructor(c, name, path, ids, minBatch, maxBatch) {
    this.c = c;
    this.cfg = c.cfg;
    this.name = name;
    this.path = path;
    this.ids = ids;
    this.strict = ids && c.cfg.strictlyIncreasing;
    this.minBatch = minBatch;
    this.maxBatch = maxBatch;
    /** @type {Segment[]} */
    this.segs = []; // FIFO; values are handed out from segs[0]
    this.buffered = 0;
    this.batch = minBatch;
    this.lastSent = 0;
    this.sentAny = false;
    this.slowFetch = false;
    this.used = false;
    this.arrived = signalled(); // resolved (and replaced) when a refill ends
    this.started = 0;
    this.ended = 0;
    /** @type {Error|null} */
    this.lastErr = null;
    this.paced = false;
    this.maxFetched = 0n;
    this.served = 0;
    this.fetched = 0;
    this.refills = 0;
    this.refillFailures = 0;
    this.throttled = 0;
    this.droppedByAge = 0;
    this.waits = 0;
    this.refillTotal = 0;
    this.refillMax = 0;
    // The refill loop.
    this.running = false;
    /** @type {Promise<void>} the end of the loop's latest run */
    this.looping = Promise.resolve();
    this.woken = false;
    /** @type {(() => void) | null} */
    this.wakeSleeper = null;
  }

  // --- taking values -------------------------------------------------------

  /**
   * One value from the buffer, or undefined when none may be handed out. Never waits.
   * @returns {bigint | undefined}
   */
  tryOne() {
    const seg = this.segs[0];
    if (seg !== undefined && (!this.ids || performance.now() < seg.expires)) {
      const v = seg.vals[seg.pos++];
      this.buffered--;
      this.served++;
      if (seg.pos === seg.vals.length) this.segs.shift();
      if (!this.used || this.buffered < this.batch) {
        this.used = true;
        this.signal();
      }
      return v;
    }
    if (seg === undefined) {
      this.askRefill();
      return undefined;
    }
    this.dropExpired(performance.now());
    return this.segs.length > 0 ? this.tryOne() : (this.askRefill(), undefined);
  }

  /**
   * Nothing is buffered: asks for a refill, unless one is under way. That one
   * will end and wake the callers waiting; asking for another would only
   * start one nobody waits for once it failed.
   */
  askRefill() {
    if (this.started === this.ended) this.signal();
  }

  /**
   * n values, waiting for refills as needed (within the options' timeout and
   * signal). On failure the error's `values` holds those it took.
   * @param {number} n @param {{timeout?: number, signal?: AbortSignal}} [opts]
   * @returns {Promise<bigint[]>}
   */
  async take(n, opts) {
    /** @type {bigint[]} */
    const out = [];
    let waitFor = 0;
    const deadline = opts?.timeout !== undefined ? performance.now() + opts.timeout : NEVER;
    for (;;) {
      this.dropExpired(performance.now());
      while (out.length < n && this.segs.length > 0) {
        const seg = this.segs[0];
        const k = Math.min(n - out.length, seg.vals.length - seg.pos);
        for (let j = 0; j < k; j++) out.push(seg.vals[seg.pos + j]);
        seg.pos += k;
        this.buffered -= k;
        this.served += k;
        if (seg.pos === seg.vals.length) this.segs.shift();
      }
      const wake = this.buffered < this.batch || (out.length > 0 && !this.used);
      if (out.length > 0) this.used = true;
      if (out.length === n) {
        if (wake) this.signal();
        return out;
      }
      // Nothing (more) buffered: wait asks for a refill unless one is under way.
      try {
        waitFor = await this.wait(waitFor, deadline, opts?.signal);
      } catch (err) {
        if (err && typeof err === 'object' && 'values' in err) /** @type {any} */ (err).values = out;
        throw err;
      }
    }
  }

  /**
   * Throws if the client is closed or a refill that ended while this call
   * waited has failed (callers that wait together share it, and a call that
   * came during a refill waits for that one only, not for the next as well);
   * else asks for a refill if none is under way and waits for the next one
   * to end. Returns the refill number the call waits for.
   * @param {number} waitFor @param {number} deadline @param {AbortSignal} [signal]
   */
  async wait(waitFor, deadline, signal) {
    if (this.c.closed) throw new ClosedError();
    if (waitFor !== 0 && this.ended >= waitFor && this.lastErr !== null && !this.paced) throw copy(this.lastErr);
    if (waitFor === 0) {
      waitFor = this.ended + 1;
      this.waits++;
    }
    signal?.throwIfAborted();
    this.askRefill();
    const arrived = this.arrived.promise;
    /** @type {Promise<never>[]} */
    const racers = [];
    /** @type {ReturnType<typeof setTimeout> | undefined} */
    let timer;
    /** @type {(() => void) | undefined} */
    let onAbort;
    if (deadline !== NEVER) {
      const left = deadline - performance.now();
      if (left <= 0) throw new WaitTimeoutError(`ticketd: no value of ${this.path} within the wait asked for`);
      racers.push(new Promise((_, reject) => {
        timer = setTimeout(() => reject(new WaitTimeoutError(`ticketd: no value of ${this.path} within the wait asked for`)), left);
      }));
    }
    if (signal) {
      racers.push(new Promise((_, reject) => {
        onAbort = () => reject(signal.reason);
        signal.addEventListener('abort', onAbort, { once: true });
      }));
    }
    try {
      await (racers.length > 0 ? Promise.race([arrived, ...racers]) : arrived);
    } finally {
      clearTimeout(timer);
      if (signal && onAbort) signal.removeEventListener('abort', onAbort);
    }
    return waitFor;
  }

  /** Drops the head segments whose IDs are older than maxAge (they expire in the order they were fetched). @param {number} now */
  dropExpired(now) {
    if (!this.ids) return;
    while (this.segs.length > 0 && now >= this.segs[0].expires) {
      const seg = /** @type {Segment} */ (this.segs.shift());
      const left = seg.vals.length - seg.pos;
      this.droppedByAge += left;
      this.buffered -= left;
    }
  }

  broadcast(/** @type {number} */ n) {
    this.ended = n;
    const a = this.arrived;
    this.arrived = signalled();
    a.resolve();
  }

  // --- refilling -----------------------------------------------------------

  /** Asks the refill loop to look at the buffer. Cheap: no allocation unless the loop must start. */
  signal() {
    if (this.wakeSleeper !== null) {
      const w = this.wakeSleeper;
      this.wakeSleeper = null;
      w();
      return;
    }
    this.woken = true;
    if (!this.running && !this.c.closed) {
      this.running = true;
      this.looping = this.loop().catch((err) => {
        this.running = false;
        // A bug, not a ticketd failure: never swallowed silently.
        process.emitWarning(`ticketd client: refill loop of ${this.path} failed: ${err?.stack ?? err}`);
      });
    }
  }

  /** Resolves once the refill loop has ended (at once if it is not running): for close. */
  stopped() {
    return this.looping;
  }

  /** Sleeps until signalled, for ms, or until close. @param {number} ms */
  sleep(ms) {
    if (this.woken || this.c.closed) {
      this.woken = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      /** @type {ReturnType<typeof setTimeout> | undefined} */
      let timer;
      const done = () => {
        clearTimeout(timer);
        this.wakeSleeper = null;
        this.c.sleepers.delete(done);
        resolve(undefined);
      };
      if (ms !== NEVER) {
        timer = setTimeout(done, Math.max(0, ms));
        timer.unref(); // an idle client never keeps the process alive
      }
      this.wakeSleeper = done;
      this.c.sleepers.add(done);
    });
  }

  /** The refill loop: keeps the buffer above its mark and, for IDs in use, fresh. */
  async loop() {
    let pauseUntil = 0;
    while (!this.c.closed) {
      this.woken = false;
      const now = performance.now();
      if (pauseUntil > now) {
        // Over a token's quota: asking again before the Retry-After would
        // only be refused again; callers keep waiting.
        await this.sleepUntil(pauseUntil);
        continue;
      }
      let wait = this.plan();
      if (wait === 0) {
        const err = await this.refill();
        if (err === null) continue;
        const pause = pauseOf(err);
        if (pause > 0) {
          pauseUntil = performance.now() + pause;
          continue;
        }
        wait = NEVER; // failed: try again only when asked (a caller, a rejoin)
      }
      if (wait === NEVER && !this.woken) {
        this.running = false; // idle: the next signal starts the loop again
        return;
      }
      await this.sleep(wait);
    }
    this.running = false;
  }

  /** Sleeps until a time, whatever signals come meanwhile (or close). @param {number} until */
  async sleepUntil(until) {
    while (!this.c.closed && performance.now() < until) {
      this.woken = false;
      await this.sleep(until - performance.now());
    }
  }

  /**
   * 0 when a refill is needed now; otherwise how long until the freshest IDs
   * come within a quarter of maxAge of expiring (a buffer in use is
   * refreshed then), or NEVER.
   */
  plan() {
    const now = performance.now();
    this.dropExpired(now);
    if (this.buffered < this.batch) return 0;
    if (!this.ids || !this.used || this.segs.length === 0) return NEVER;
    const refreshAt = this.segs[this.segs.length - 1].expires - this.cfg.maxAge / 4;
    return now >= refreshAt ? 0 : refreshAt - now;
  }

  /** Fetches one batch from the first endpoint that gives it; resolves to null or the refill's error. */
  async refill() {
    const attempt = ++this.started;
    const now = performance.now();
    if (this.sentAny) {
      const lasted = now - this.lastSent;
      if (this.slowFetch) this.batch = Math.max(Math.floor(this.batch / 2), this.minBatch);
      else if (lasted < this.cfg.batchPeriod) this.batch = Math.min(this.batch * 2, this.maxBatch);
      else if (lasted > 2 * this.cfg.batchPeriod) this.batch = Math.max(Math.floor(this.batch / 2), this.minBatch);
    }
    const n = this.batch;
    const path = this.strict && this.maxFetched > 0n ? `${this.path}?after=${this.maxFetched}` : this.path;
    const eps = this.c.endpoints;
    // First the endpoints that are up, each with callTimeout. If none is up,
    // or all of those fail, every endpoint, each with as long as an answer
    // can be of use (maxAge): a slow endpoint is not a dead one.
    let [order, lastResort] = eps.pick();
    /** @type {unknown} */
    let err = null;
    for (let pass = 0; pass < 2; pass++) {
      const timeout = lastResort ? this.cfg.maxAge : this.cfg.callTimeout;
      for (const i of order) {
        const sent = performance.now();
        try {
          const vals = await this.fetch(i, timeout, path, n);
          this.append(vals, sent, attempt);
          return null;
        } catch (e) {
          err = e;
        }
        if (this.c.closed) return new ClosedError();
        if (err instanceof RejectedError && err.status !== 429) break; // every ticketd would refuse it
      }
      if (lastResort || err instanceof RejectedError) break;
      order = eps.all();
      lastResort = true;
    }
    const failure = err instanceof RejectedError ? err : eps.unavailable();
    this.refillFailures++;
    this.lastErr = failure;
    // Over a token's quota the refill is paused, not failed: callers keep
    // waiting for the refill after Retry-After.
    this.paced = pauseOf(failure) > 0;
    if (this.paced) this.throttled++;
    // Perhaps too big to arrive in time, or above -max-batch: ask for less.
    this.batch = Math.max(Math.floor(this.batch / 2), this.minBatch);
    this.broadcast(attempt);
    return failure;
  }

  /** Asks endpoint i for n values, checks them, and records the outcome. @param {number} i @param {number} timeout @param {string} path @param {number} n */
  async fetch(i, timeout, path, n) {
    const eps = this.c.endpoints;
    const base = eps.eps[i].base;
    try {
      const vals = await this.c.transport.get(base, path, n, timeout, !this.ids);
      this.check(vals);
      eps.succeeded(i);
      return vals;
    } catch (err) {
      if (!this.c.closed) eps.failed(i, new Error(`${base}${this.path}: ${describe(err)}`, { cause: err }), skips(this.ids, err));
      throw err;
    }
  }

  /** Refuses IDs that are not positive, a batch that does not increase, and strictly, IDs at or below after=. @param {BigInt64Array | BigUint64Array} vals */
  check(vals) {
    if (!this.ids) return;
    for (let i = 0; i < vals.length; i++) {
      const v = vals[i];
      if (v <= 0n) throw new BadAnswerError(`ID ${BigInt.asUintN(64, v)} is not a positive int64`);
      if (i > 0 && v <= vals[i - 1]) throw new BadAnswerError(`ID ${v} after ${vals[i - 1]}: a batch must increase`);
    }
    if (this.strict && vals.length > 0 && vals[0] <= this.maxFetched) {
      throw new BadAnswerError(`ID ${vals[0]} asked for after ${this.maxFetched}`);
    }
  }

  /** @param {BigInt64Array | BigUint64Array} vals @param {number} sent @param {number} attempt */
  append(vals, sent, attempt) {
    const took = performance.now() - sent;
    if (vals.length === 0) return;
    this.segs.push(new Segment(vals, this.ids ? sent + this.cfg.maxAge : NEVER));
    if (this.ids && vals[vals.length - 1] > this.maxFetched) this.maxFetched = vals[vals.length - 1];
    this.buffered += vals.length;
    this.fetched += vals.length;
    this.refills++;
    this.refillTotal += took;
    this.refillMax = Math.max(this.refillMax, took);
    this.lastSent = sent;
    this.sentAny = true;
    this.used = false;
    this.slowFetch = took > this.cfg.callTimeout / 4;
    this.lastErr = null;
    this.paced = false;
    this.broadcast(attempt);
  }

  /** Empties the buffer at close (gaps, never repeats) and wakes every caller waiting. */
  discard() {
    this.segs = [];
    this.buffered = 0;
    this.broadcast(this.started);
  }

  stats() {
    // Buffered counts only values that may still be handed out.
    this.dropExpired(performance.now());
    return {
      served: this.served, fetched: this.fetched, buffered: this.buffered, batch: this.batch,
      refills: this.refills, refillFailures: this.refillFailures, throttled: this.throttled,
      refillLatencyTotal: this.refillTotal, refillLatencyMax: this.refillMax,
      droppedByAge: this.droppedByAge, waits: this.waits, lastError: this.lastErr ? this.lastErr.message : '',
    };
  }
}

/** A 429's pause in ms: its Retry-After, or a second; 0 for any other error. @param {unknown} err */
function pauseOf(err) {
  if (err instanceof RejectedError && err.status === 429) return err.retryAfter > 0 ? err.retryAfter : 1000;
  return 0;
}

/** The refill's error for one caller: the same kind and message, its own stack, the original as cause. @param {Error} err */
function copy(err) {
  const e = Object.create(Object.getPrototypeOf(err));
  Object.assign(e, err);
  const fresh = new Error(err.message, { cause: err });
  Object.defineProperty(e, 'message', { value: err.message, writable: true, configurable: true });
  Object.defineProperty(e, 'stack', { value: fresh.stack, writable: true, configurable: true });
  Object.defineProperty(e, 'cause', { value: err, writable: true, configurable: true });
  e.values = [];
  return e;
}
