// The Client: IDs and sequence values from local buffers, refilled from
// ticketd in the background.
import { inspect } from 'node:util';
import { settings, validName } from './config.js';
import { Endpoints } from './endpoints.js';
import { BadNameError, ClosedError } from './errors.js';
import { Stream } from './stream.js';
import { HttpTransport } from './transport.js';

export const version = '0.1.0';

/**
 * ticketd's client. It keeps the contract every ticketd client keeps
 * (docs/client.md in ticketd's repository). Values are bigints: snowflake IDs
 * reach 2^63 - 1, past what a number holds exactly.
 */
export class Client {
  /** @param {import('../index.js').ClientOptions} options */
  constructor(options) {
    const cfg = settings(options);
    /** @type {import('./transport.js').HttpTransport} */
    this.transport = new HttpTransport(cfg);
    // The transport alone keeps the token (in a private field): nothing the
    // client holds prints it, whatever prints the client's parts.
    this.cfg = Object.freeze({ ...cfg, token: cfg.token ? '[redacted]' : '' });
    this.closed = false;
    /** @type {Promise<void> | null} the end of close, once it began */
    this.closing = null;
    /** @type {Set<() => void>} the refill loops' sleeps, ended by close */
    this.sleepers = new Set();
    this.endpoints = new Endpoints(this, this.cfg.endpoints);
    this.ids = new Stream(this, '', '/v1/ids', true, this.cfg.minBatch, this.cfg.maxBatch);
    /** @type {Map<string, Sequence>} */
    this.seqs = new Map();
    this.probeTimer = setInterval(() => { this.endpoints.probeDown(); }, this.cfg.probeEvery);
    this.probeTimer.unref();
    this.ids.signal(); // the first batch of IDs, at once
  }

  /**
   * A snowflake ID: from the buffer, or after the next refill when it is empty.
   * @param {import('../index.js').WaitOptions} [opts]
   * @returns {Promise<bigint>}
   */
  async next(opts) {
    const v = this.ids.tryOne();
    if (v !== undefined) return v;
    return (await this.ids.take(1, opts))[0];
  }

  /**
   * A snowflake ID from the buffer, or undefined when none is buffered (a
   * refill is then on its way). Never waits; throws only once closed.
   * @returns {bigint | undefined}
   */
  tryNext() {
    const v = this.ids.tryOne();
    if (v === undefined && this.closed) throw new ClosedError();
    return v;
  }

  /**
   * n snowflake IDs, waiting for refills as needed. On failure the error's
   * `values` holds the IDs taken before it (valid and unique).
   * @param {number} n @param {import('../index.js').WaitOptions} [opts]
   */
  nextN(n, opts) {
    return this.ids.take(count(n), opts);
  }

  /**
   * The named sequence's handle (GET /v1/tickets/NAME), its buffer started on
   * first use. Throws BadNameError for a name ticketd would refuse.
   * @param {string} name
   */
  sequence(name) {
    let s = this.seqs.get(name);
    if (s !== undefined) return s;
    if (!validName(name)) throw new BadNameError(name);
    if (this.closed) throw new ClosedError();
    s = new Sequence(new Stream(this, name, `/v1/tickets/${name}`, false, 1, this.cfg.maxTicketBatch));
    this.seqs.set(name, s);
    return s;
  }

  /** A value of the named sequence. @param {string} name @param {import('../index.js').WaitOptions} [opts] */
  async ticket(name, opts) {
    return this.sequence(name).next(opts);
  }

  /** A value of the named sequence from its buffer, or undefined. @param {string} name */
  tryTicket(name) {
    return this.sequence(name).tryNext();
  }

  /** n values of the named sequence. @param {string} name @param {number} n @param {import('../index.js').WaitOptions} [opts] */
  tickets(name, n, opts) {
    return this.sequence(name).nextN(n, opts);
  }

  /** A copy of the client's counters, for an application to export. */
  stats() {
    /** @type {Record<string, ReturnType<Stream['stats']>>} */
    const sequences = {};
    for (const [name, s] of this.seqs) sequences[name] = s.stream.stats();
    return { ids: this.ids.stats(), sequences, endpoints: this.endpoints.stats() };
  }

  /**
   * Stops the client: calls waiting for a refill reject with ClosedError,
   * requests in flight are aborted, and every timer and connection the
   * client started has ended when the promise resolves. Buffered values are
   * dropped (gaps, never repeats). Idempotent: every call resolves once
   * everything has ended.
   */
  close() {
    if (this.closing === null) {
      this.closed = true;
      this.closing = this.stop();
    }
    return this.closing;
  }

  async stop() {
    clearInterval(this.probeTimer);
    const released = this.transport.close();
    for (const wake of [...this.sleepers]) wake();
    const streams = [this.ids, ...[...this.seqs.values()].map((s) => s.stream)];
    for (const s of streams) s.discard();
    await Promise.all([released, this.endpoints.probed(), ...streams.map((s) => s.stopped())]);
    // The callers that discard woke clear their wait timers in the
    // microtasks it queued: all of them have run before the next turn.
    await new Promise((resolve) => { setImmediate(resolve); });
  }

  /** The client's settings as printed or logged: the token never, only whether there is one. */
  toJSON() {
    const { endpoints, token, ca, agent, callTimeout, maxAge, minBatch, maxBatch, maxTicketBatch, batchPeriod,
      probeEvery, strictlyIncreasing } = this.cfg;
    return {
      endpoints, token, ca: ca !== undefined, agent: agent !== undefined, callTimeout, maxAge, minBatch, maxBatch,
      maxTicketBatch, batchPeriod, probeEvery, strictlyIncreasing,
    };
  }

  toString() {
    return `Client ${JSON.stringify(this.toJSON())}`;
  }

  /** What console.log and util.inspect print: the settings, as toJSON gives them. */
  [inspect.custom](/** @type {number} */ depth, /** @type {import('node:util').InspectOptionsStylized} */ options) {
    return `Client ${inspect(this.toJSON(), { ...options, depth: options.depth === null ? null : Math.max(depth, 2) })}`;
  }

  /** Wakes every buffer (an endpoint rejoined). */
  wakeAll() {
    this.ids.signal();
    for (const s of this.seqs.values()) s.stream.signal();
  }

  async [Symbol.asyncDispose ?? Symbol.for('Symbol.asyncDispose')]() {
    await this.close();
  }
}

/** A named sequence's values, from a buffer of its own: unique, not ordered, never aging. */
export class Sequence {
  /** @param {Stream} stream */
  constructor(stream) {
    this.stream = stream;
  }

  /** The sequence's name. */
  get name() {
    return this.stream.name;
  }

  /** A value: from the buffer, or after the next refill. @param {import('../index.js').WaitOptions} [opts] */
  async next(opts) {
    const v = this.stream.tryOne();
    if (v !== undefined) return v;
    return (await this.stream.take(1, opts))[0];
  }

  /** A value from the buffer, or undefined (a refill is then on its way). Never waits. */
  tryNext() {
    const v = this.stream.tryOne();
    if (v === undefined && this.stream.c.closed) throw new ClosedError();
    return v;
  }

  /** n values. @param {number} n @param {import('../index.js').WaitOptions} [opts] */
  nextN(n, opts) {
    return this.stream.take(count(n), opts);
  }
}

/** @param {number} n */
function count(n) {
  if (!Number.isInteger(n) || n < 0) throw new RangeError(`ticketd: want a count of 0 or more, got ${n}`);
  return n;
}
