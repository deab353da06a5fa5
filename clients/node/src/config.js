// A Client's options with their defaults filled in and checked.
import { BadConfigError } from './errors.js';

/** Defaults and bounds (milliseconds for durations): the contract's, as every ticketd client has them. */
export const limits = Object.freeze({
  defaultCallTimeout: 500,
  minCallTimeout: 1,
  defaultMaxAge: 1000,
  minMaxAge: 10,
  maxMaxAge: 3_600_000,
  defaultMinBatch: 16,
  defaultMaxBatch: 10_000,
  maxMaxBatch: 1_000_000,
  defaultMaxTicketBatch: 1000,
  minBatchPeriod: 1,
  defaultProbeEvery: 250,
  minProbeEvery: 10,
  maxProbeEvery: 60_000,
});

/**
 * @param {import('../index.js').ClientOptions} o
 * @returns {Settings}
 */
export function settings(o) {
  if (o === null || typeof o !== 'object') {
    throw new BadConfigError('want an options object with endpoints');
  }
  const endpoints = bases(o.endpoints);
  const num = (/** @type {string} */ name) => {
    const v = /** @type {any} */ (o)[name];
    if (v === undefined || v === null || v === 0) return 0;
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new BadConfigError(`${name}: want a number, got ${typeof v}`);
    return v;
  };
  const maxAge = num('maxAge') || limits.defaultMaxAge;
  const callTimeout = num('callTimeout') || Math.min(limits.defaultCallTimeout, maxAge / 2);
  const maxBatch = num('maxBatch') || Math.max(limits.defaultMaxBatch, num('minBatch'));
  const minBatch = num('minBatch') || Math.min(limits.defaultMinBatch, maxBatch);
  const maxTicketBatch = num('maxTicketBatch') || limits.defaultMaxTicketBatch;
  const batchPeriod = num('batchPeriod') || maxAge / 10;
  const probeEvery = num('probeEvery') || limits.defaultProbeEvery;
  const token = o.token ?? '';
  if (maxAge < limits.minMaxAge || maxAge > limits.maxMaxAge) {
    throw new BadConfigError(`maxAge ${maxAge} ms: want ${limits.minMaxAge} ms to ${limits.maxMaxAge} ms`);
  }
  if (callTimeout < limits.minCallTimeout || callTimeout > maxAge) {
    throw new BadConfigError(`callTimeout ${callTimeout} ms: want ${limits.minCallTimeout} ms to maxAge (${maxAge} ms)`);
  }
  if (!Number.isInteger(minBatch) || !Number.isInteger(maxBatch) || minBatch < 1 || minBatch > maxBatch || maxBatch > limits.maxMaxBatch) {
    throw new BadConfigError(`minBatch ${minBatch}, maxBatch ${maxBatch}: want 1 <= minBatch <= maxBatch <= ${limits.maxMaxBatch}`);
  }
  if (!Number.isInteger(maxTicketBatch) || maxTicketBatch < 1 || maxTicketBatch > limits.maxMaxBatch) {
    throw new BadConfigError(`maxTicketBatch ${maxTicketBatch}: want 1 to ${limits.maxMaxBatch}`);
  }
  if (batchPeriod < limits.minBatchPeriod || batchPeriod > maxAge / 2) {
    throw new BadConfigError(`batchPeriod ${batchPeriod} ms: want ${limits.minBatchPeriod} ms to maxAge/2 (${maxAge / 2} ms)`);
  }
  if (probeEvery < limits.minProbeEvery || probeEvery > limits.maxProbeEvery) {
    throw new BadConfigError(`probeEvery ${probeEvery} ms: want ${limits.minProbeEvery} ms to ${limits.maxProbeEvery} ms`);
  }
  if (typeof token !== 'string' || !tokenSyntax(token)) {
    // Never quoted: it is a secret.
    throw new BadConfigError("token: want letters, digits and - . _ ~ + / (then optional =), as ticketd's tokens are");
  }
  if (o.ca !== undefined && o.agent !== undefined) {
    throw new BadConfigError('ca with agent: give the agent the CA instead');
  }
  return {
    endpoints, token, ca: o.ca, agent: o.agent, maxAge, callTimeout, minBatch, maxBatch, maxTicketBatch,
    batchPeriod, probeEvery, strictlyIncreasing: Boolean(o.strictlyIncreasing),
  };
}

/**
 * @typedef {object} Settings
 * @property {string[]} endpoints
 * @property {string} token
 * @property {any} ca
 * @property {any} agent
 * @property {number} maxAge
 * @property {number} callTimeout
 * @property {number} minBatch
 * @property {number} maxBatch
 * @property {number} maxTicketBatch
 * @property {number} batchPeriod
 * @property {number} probeEvery
 * @property {boolean} strictlyIncreasing
 */

/** @param {unknown} endpoints */
function bases(endpoints) {
  if (!Array.isArray(endpoints) || endpoints.length === 0) {
    throw new BadConfigError('no endpoint: give at least one base URL, as http://10.0.0.5:8080');
  }
  const seen = new Set();
  return endpoints.map((e) => {
    let u;
    try {
      u = new URL(String(e));
    } catch {
      throw new BadConfigError(`endpoint ${JSON.stringify(e)}: not a URL`);
    }
    if (u.protocol !== 'http:' && u.protocol !== 'https:') {
      throw new BadConfigError(`endpoint ${JSON.stringify(e)}: want an http:// or https:// URL`);
    }
    if (!u.hostname) throw new BadConfigError(`endpoint ${JSON.stringify(e)}: no host`);
    if (u.search || u.hash || u.username || u.password) {
      throw new BadConfigError(`endpoint ${JSON.stringify(e)}: want a base URL without query, fragment or user`);
    }
    const base = String(e).replace(/\/+$/, '');
    if (seen.has(base)) throw new BadConfigError(`endpoint ${JSON.stringify(e)}: given twice`);
    seen.add(base);
    return base;
  });
}

/** RFC 6750's token syntax, which ticketd accepts: letters, digits, - . _ ~ + /, then optional '='. */
export function tokenSyntax(/** @type {string} */ tok) {
  return tok === '' || /^[A-Za-z0-9\-._~+/]+=*$/.test(tok);
}

/** ticketd's rule for sequence names. */
export function validName(/** @type {unknown} */ name) {
  return typeof name === 'string' && /^[a-z][a-z0-9_]{0,47}$/.test(name);
}
