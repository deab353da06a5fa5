// Compiled (never run) by `npm run typecheck`: the API as a TypeScript
// application uses it, against index.d.ts.
import {
  Client, ClosedError, RejectedError, Sequence, TicketdError, UnavailableError, WaitTimeoutError, limits, version,
  type ClientOptions, type Stats,
} from 'ticketd-client';

const options: ClientOptions = { endpoints: ['http://127.0.0.1:8080'], maxAge: 500, strictlyIncreasing: true };
const c = new Client(options);
const id: bigint = await c.next();
const maybe: bigint | undefined = c.tryNext();
const many: bigint[] = await c.nextN(10, { timeout: 100 });
const seq: Sequence = c.sequence('orders');
const v: bigint = await seq.next({ signal: AbortSignal.timeout(1000) });
const t: bigint = await c.ticket('orders');
const ts: bigint[] = await c.tickets('orders', 5);
const st: Stats = c.stats();
const served: number = st.ids.served + (st.sequences['orders']?.served ?? 0);
try {
  await c.next();
} catch (e) {
  if (e instanceof RejectedError) console.log(e.status, e.serverMessage, e.endpoint);
  else if (e instanceof UnavailableError) console.log(e.errors.length);
  else if (e instanceof WaitTimeoutError || e instanceof ClosedError) console.log(e.code);
  else if (e instanceof TicketdError) console.log(e.values.length);
}
{
  await using d = new Client({ endpoints: ['http://127.0.0.1:8080'] });
  await d.next();
}
await c.close();
console.log(id, maybe, many, v, t, ts, served, seq.name, limits.defaultMaxAge, version);
