// Speaks ticketd's HTTP API with node:http and node:https: binary batches
// over keep-alive connections, readiness probes.
import http from 'node:http';
import https from 'node:https';
import { BadAnswerError, ClosedError, RequestTimeoutError, StatusError, RejectedError } from './errors.js';

/** How much of an error answer is read. */
const MAX_ERROR_BODY = 4 << 10;
/** The longest pause a Retry-After can ask for (ms): a broken answer cannot stall a buffer for hours. */
export const MAX_RETRY_AFTER = 60_000;
const littleEndian = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class HttpTransport {
  /** The Authorization header of value requests: private, so that no printed form of the transport holds it. */
  #auth;

  /** @param {import('./config.js').Settings} cfg */
  constructor(cfg) {
    this.#auth = cfg.token ? `Bearer ${cfg.token}` : '';
    this.ownAgents = cfg.agent === undefined;
    // Keep-alive connections, unreferenced while idle (an idle client never
    // keeps the process alive); TLS 1.2 or later.
    this.httpAgent = cfg.agent ?? new http.Agent({ keepAlive: true, maxSockets: 16 });
    this.httpsAgent = cfg.agent ?? new https.Agent({ keepAlive: true, maxSockets: 16, ca: cfg.ca, minVersion: 'TLSv1.2' });
    /**
     * The requests in flight, each with a promise that settles once the
     * request has emitted 'close' (its timer cleared, its socket released).
     * @type {Map<import('node:http').ClientRequest, Promise<void>>}
     */
    this.inFlight = new Map();
    /**
     * The sockets of the transport's own agents, each with a promise that
     * settles once it has closed.
     * @type {Map<import('node:net').Socket, Promise<void>>}
     */
    this.sockets = new Map();
    this.closed = false;
  }

  /**
   * n values of path from base within timeoutMs, in the host's byte order
   * (ticketd sends them big-endian): IDs are int64s, sequence values uint64s.
   * @param {string} base @param {string} path @param {number} n @param {number} timeoutMs @param {boolean} unsigned
   * @returns {Promise<BigInt64Array | BigUint64Array>}
   */
  async get(base, path, n, timeoutMs, unsigned) {
    const sep = path.includes('?') ? '&' : '?';
    const headers = /** @type {Record<string,string>} */ ({ Accept: 'application/octet-stream' });
    if (this.#auth) headers.Authorization = this.#auth;
    const want = 8 * n;
    const res = await this.send(`${base}${path}${sep}format=binary&n=${n}`, headers, want, timeoutMs, base);
    const ct = String(res.headers['content-type'] ?? '');
    if (ct.split(';')[0].trim().toLowerCase() !== 'application/octet-stream') {
      throw new BadAnswerError(`Content-Type ${JSON.stringify(ct)}, want application/octet-stream`);
    }
    if (res.tooLong || res.body.length !== want) {
      throw new BadAnswerError(`${res.tooLong ? `more than ${want}` : res.body.length} bytes for ${n} values, want ${want}`);
    }
    const vals = unsigned ? new BigUint64Array(n) : new BigInt64Array(n);
    const bytes = Buffer.from(vals.buffer);
    res.body.copy(bytes);
    if (littleEndian) bytes.swap64();
    return vals;
  }

  /** Resolves when base answers GET /readyz with 200 within timeoutMs. @param {string} base @param {number} timeoutMs */
  async probe(base, timeoutMs) {
    await this.send(`${base}/readyz`, {}, MAX_ERROR_BODY, timeoutMs, base);
  }

  /**
   * @param {string} url @param {Record<string,string>} headers @param {number} limit @param {number} timeoutMs @param {string} base
   * @returns {Promise<{headers: import('node:http').IncomingHttpHeaders, body: Buffer, tooLong: boolean}>}
   */
  send(url, headers, limit, timeoutMs, base) {
    if (this.closed) return Promise.reject(new ClosedError());
    return new Promise((resolve, reject) => {
      const u = new URL(url);
      const mod = u.protocol === 'https:' ? https : http;
      const agent = u.protocol === 'https:' ? this.httpsAgent : this.httpAgent;
      const req = mod.request(u, { agent, headers }, (res) => {
        const status = res.statusCode ?? 0;
        const max = status === 200 ? limit : MAX_ERROR_BODY;
        /** @type {Buffer[]} */
        const chunks = [];
        let got = 0;
        let tooLong = false;
        res.on('data', (/** @type {Buffer} */ c) => {
          if (tooLong) return;
          if (got + c.length > max) {
            tooLong = true;
            req.destroy(); // the rest is not read: the connection goes
            finish();
            return;
          }
          chunks.push(c);
          got += c.length;
        });
        res.on('end', finish);
        res.on('error', fail);
        let done = false;
        function finish() {
          if (done) return;
          done = true;
          cleanup();
          const body = Buffer.concat(chunks, got);
          if (status !== 200) {
            reject(statusError(base, status, res.headers, body));
            return;
          }
          resolve({ headers: res.headers, body, tooLong });
        }
      });
      const timer = setTimeout(() => req.destroy(new RequestTimeoutError(timeoutMs)), timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.inFlight.delete(req);
      };
      /** @param {Error} err */
      function fail(err) {
        cleanup();
        reject(err);
      }
      req.on('error', fail);
      this.inFlight.set(req, new Promise((done) => req.once('close', () => {
        this.inFlight.delete(req);
        done();
      })));
      if (this.ownAgents) req.on('socket', (sock) => this.track(sock));
      req.end();
    });
  }

  /** Remembers a socket of the transport's own agents until it closes. @param {import('node:net').Socket} sock */
  track(sock) {
    if (this.sockets.has(sock)) return; // kept alive, it serves request after request
    this.sockets.set(sock, new Promise((done) => sock.once('close', () => {
      this.sockets.delete(sock);
      done();
    })));
  }

  /**
   * Aborts every request in flight and closes the connections of the
   * transport's own agents; resolves once every one of them has closed.
   */
  async close() {
    this.closed = true;
    const ended = [...this.inFlight.values(), ...this.sockets.values()];
    for (const req of this.inFlight.keys()) req.destroy(new ClosedError());
    if (this.ownAgents) {
      this.httpAgent.destroy();
      this.httpsAgent.destroy();
      for (const sock of this.sockets.keys()) sock.destroy();
    }
    await Promise.all(ended);
  }
}

/**
 * The error of a non-200 answer, with ticketd's {"error": …}.
 * @param {string} base @param {number} status @param {import('node:http').IncomingHttpHeaders} headers @param {Buffer} body
 */
export function statusError(base, status, headers, body) {
  const text = body.toString('utf8').trim();
  let msg = text;
  try {
    const j = JSON.parse(text);
    if (j && typeof j.error === 'string' && j.error) msg = j.error;
  } catch {
    // not JSON: the start of the body
  }
  if (msg.length > 200) msg = `${msg.slice(0, 200)}…`;
  let retryAfter = 0;
  const ra = String(headers['retry-after'] ?? '').trim();
  if (/^\d+$/.test(ra) && Number(ra) > 0) retryAfter = Math.min(Number(ra) * 1000, MAX_RETRY_AFTER);
  return status >= 400 && status < 500
    ? new RejectedError(base, status, msg, retryAfter)
    : new StatusError(base, status, msg, retryAfter);
}
