// The ticketd endpoints as the client sees them: which is current (refills
// try it first, so that IDs increase while it works), which are up, and the
// background probes that let a skipped one rejoin.
import { RejectedError, StatusError, UnavailableError, RequestTimeoutError } from './errors.js';

export class Endpoints {
  /** @param {import('./client.js').Client} c @param {string[]} bases */
  constructor(c, bases) {
    this.c = c;
    this.eps = bases.map((base) => ({
      base, up: true, lastErr: /** @type {Error|null} */ (null), probeErr: /** @type {Error|null} */ (null),
      requests: 0, failures: 0, rejected: 0, probes: 0,
    }));
    this.cur = 0;
    this.probing = false;
    /** @type {Promise<void>} the end of the latest round of probes */
    this.round = Promise.resolve();
  }

  /** Resolves once the round of probes under way, if any, has ended: for close. */
  probed() {
    return this.round;
  }

  /**
   * The endpoints a refill should try first: the current one, then the others
   * that are up, in order; when none is up, all of them, and lastResort.
   * @returns {[number[], boolean]}
   */
  pick() {
    const order = [];
    if (this.eps[this.cur].up) order.push(this.cur);
    this.eps.forEach((e, i) => { if (i !== this.cur && e.up) order.push(i); });
    return order.length > 0 ? [order, false] : [this.all(), true];
  }

  /** Every endpoint, the current one first, then in order. */
  all() {
    const order = [this.cur];
    this.eps.forEach((_, i) => { if (i !== this.cur) order.push(i); });
    return order;
  }

  /** @param {number} i */
  succeeded(i) {
    const e = this.eps[i];
    e.requests++;
    e.up = true;
    e.probeErr = null;
    this.cur = i;
  }

  /**
   * A request to endpoint i failed; with skip, refills skip it until a probe
   * finds it ready. A 4xx is the request's fault, not the endpoint's: it
   * counts as rejected, neither as a failure nor as the endpoint's last error.
   * @param {number} i @param {Error} err @param {boolean} skip
   */
  failed(i, err, skip) {
    const e = this.eps[i];
    e.requests++;
    if (err.cause instanceof RejectedError) {
      e.rejected++;
      return;
    }
    e.failures++;
    e.lastErr = err;
    if (skip && e.up) {
      e.up = false;
      this.probeDown(); // at once, then every probeEvery
    }
  }

  /** The error of a call that found nothing buffered and no endpoint able to issue. */
  unavailable() {
    const parts = this.eps.map((e) => {
      let s = `${e.base} (${e.up ? 'up' : 'down'}): ${e.lastErr ? e.lastErr.message : 'no error yet'}`;
      if (e.probeErr) s += `; then ${e.probeErr.message}`;
      return s;
    });
    return new UnavailableError(`ticketd: no endpoint could issue: ${parts.join('; ')}`,
      /** @type {Error[]} */ (this.eps.map((e) => e.lastErr).filter(Boolean)));
  }

  /** Probes every endpoint that is down, concurrently, and wakes the buffers when one rejoins. One round at a time. */
  probeDown() {
    if (this.probing || this.c.closed) return this.round;
    const down = this.eps.filter((e) => !e.up);
    if (down.length === 0) return this.round;
    this.probing = true;
    this.round = this.probeRound(down);
    return this.round;
  }

  /** @param {typeof this.eps} down */
  async probeRound(down) {
    try {
      const results = await Promise.allSettled(down.map((e) => this.c.transport.probe(e.base, this.c.cfg.callTimeout)));
      if (this.c.closed) return;
      let rejoined = false;
      results.forEach((r, k) => {
        const e = down[k];
        e.probes++;
        if (r.status === 'fulfilled') {
          e.up = true;
          e.probeErr = null;
          rejoined = true;
        } else {
          e.probeErr = new Error(`probe: ${describe(r.reason)}`);
        }
      });
      if (rejoined) this.c.wakeAll();
    } finally {
      this.probing = false;
    }
  }

  stats() {
    return this.eps.map((e, i) => ({
      url: e.base, up: e.up, current: i === this.cur, requests: e.requests, failures: e.failures, rejected: e.rejected, probes: e.probes,
      lastError: e.lastErr ? e.lastErr.message : '', lastProbeError: e.probeErr ? e.probeErr.message : '',
    }));
  }
}

/**
 * Whether a failed refill takes the endpoint out for every buffer. A 4xx is
 * the request's fault, not the endpoint's. For a sequence, a slow or 5xx
 * answer is most likely the ticket servers' trouble (ticketd answers 503 when
 * they fail): the endpoint may still issue IDs, so only a connection that
 * failed takes it out.
 * @param {boolean} ids @param {unknown} err
 */
export function skips(ids, err) {
  if (err instanceof RejectedError) return false;
  if (ids) return true;
  return !(err instanceof StatusError) && !(err instanceof RequestTimeoutError);
}

/** A failure in words: its message, or its code (Node gives ECONNREFUSED and the like). @param {unknown} err */
export function describe(err) {
  if (err instanceof Error) {
    const code = /** @type {any} */ (err).code;
    if (err.message) return err.message;
    return code ? String(code) : err.name;
  }
  return String(err);
}
