// A server that answers like ticketd, for the unit tests: /v1/ids and
// /v1/tickets/NAME in the binary format (honouring after=), /readyz, with
// knobs for failures: a status, a delay, a token, a body of its own.
import http from 'node:http';
import https from 'node:https';

export class FakeTicketd {
  /** @param {bigint} firstId @param {{key: string, cert: string}} [tls] */
  constructor(firstId, tls) {
    this.nextId = firstId;
    this.nextTicket = 1n;
    this.sequences = new Set(['orders']);
    this.status = 200;
    this.statusTimes = Infinity;
    this.statusOnly = null;
    this.retryAfter = null;
    this.delayMs = 0;
    this.ready = true;
    this.token = null;
    this.body = null; // (n) => Buffer
    this.contentType = 'application/octet-stream';
    this.requests = [];
    this.tls = tls;
    const handler = (req, res) => this.handle(req, res);
    this.server = tls ? https.createServer(tls, handler) : http.createServer(handler);
    this.sockets = new Set();
    this.server.on('connection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
    this.server.on('secureConnection', (s) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
  }

  async start() {
    await new Promise((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.url = `${this.tls ? 'https' : 'http'}://127.0.0.1:${this.server.address().port}`;
    return this;
  }

  static async start(firstId, tls) {
    return new FakeTicketd(firstId, tls).start();
  }

  valueRequests() {
    return this.requests.filter((r) => r.path !== '/readyz');
  }

  handle(req, res) {
    const u = new URL(req.url, 'http://x');
    const r = { path: u.pathname, query: Object.fromEntries(u.searchParams), auth: req.headers.authorization, at: performance.now() };
    r.n = Number(r.query.n ?? 1);
    this.requests.push(r);
    const json = (status, msg) => {
      res.writeHead(status, { 'Content-Type': 'application/json', ...(this.retryAfter && status !== 200 ? { 'Retry-After': this.retryAfter } : {}) });
      res.end(JSON.stringify({ error: msg }));
    };
    if (r.path === '/readyz') {
      res.writeHead(this.ready ? 200 : 503, { 'Content-Type': 'text/plain' });
      res.end(this.ready ? 'ready' : 'not ready');
      return;
    }
    if (this.token !== null && req.headers.authorization !== `Bearer ${this.token}`) {
      json(req.headers.authorization ? 403 : 401, 'no valid token');
      return;
    }
    const answer = () => {
      let st = this.status;
      if (this.statusOnly !== null && !r.path.startsWith(this.statusOnly)) st = 200;
      if (st !== 200) {
        if (this.statusTimes > 0) this.statusTimes--;
        else st = 200;
      }
      if (st !== 200) return json(st, `fake failure ${st}`);
      if (r.query.format !== 'binary') return json(400, 'want format=binary');
      const b = Buffer.alloc(8 * r.n);
      if (r.path === '/v1/ids') {
        if (r.query.after !== undefined && BigInt(r.query.after) + 1n > this.nextId) this.nextId = BigInt(r.query.after) + 1n;
        for (let i = 0; i < r.n; i++) b.writeBigInt64BE(this.nextId++, 8 * i);
      } else if (r.path.startsWith('/v1/tickets/')) {
        const name = r.path.slice('/v1/tickets/'.length);
        if (!this.sequences.has(name)) return json(404, `unknown sequence "${name}"`);
        for (let i = 0; i < r.n; i++) b.writeBigInt64BE(this.nextTicket++, 8 * i);
      } else {
        return json(404, 'no such endpoint');
      }
      res.writeHead(200, { 'Content-Type': this.contentType });
      res.end(this.body ? this.body(r.n) : b);
    };
    if (this.delayMs > 0) setTimeout(answer, this.delayMs);
    else answer();
  }

  async close() {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
  }
}

export const A = 1n << 40n;
export const B = 1n << 50n;
export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function eventually(ms, what, cond) {
  const end = performance.now() + ms;
  for (;;) {
    if (await cond()) return;
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await sleep(5);
  }
}
