// Types of ticketd-client. Hand-written beside the JavaScript of src/ (the
// package ships what it is tested as, with no build step); test/types.test.js
// checks that they name exactly what src/index.js exports, and `npm run
// typecheck` (make test-node) checks the sources and test/types-usage.ts
// against them with tsc.

import type { Agent } from 'node:http';

/** Options of a Client. Durations are milliseconds; every option but endpoints has a default. */
export interface ClientOptions {
  /** ticketd's base URLs ("http://10.0.0.5:8080"), in order of preference. Required. */
  endpoints: string[];
  /** The bearer token ticketd gave this application, sent with every request for values (not with probes). Never printed. */
  token?: string;
  /** The CAs (PEM) an https:// endpoint's certificate must chain to; default: Node's. Not with agent. */
  ca?: string | Buffer | Array<string | Buffer>;
  /** An http.Agent or https.Agent of your own (proxies, client certificates), used for every endpoint; default: the client's own keep-alive agents, destroyed by close. */
  agent?: Agent;
  /** The deadline of one request to one endpoint. Default: 500, or maxAge/2 if less. From 1 to maxAge. */
  callTimeout?: number;
  /** IDs older than this (since their request was sent) are dropped, not handed out. Default: 1000. From 10 to 3600000. */
  maxAge?: number;
  /** The fewest IDs one refill asks for. Default: 16. */
  minBatch?: number;
  /** The most IDs one refill asks for: at most every endpoint's -max-batch. Default: 10000; at most 1000000. */
  maxBatch?: number;
  /** The most values of a sequence one refill asks for. Default: 1000. From 1 to 1000000. */
  maxTicketBatch?: number;
  /** How long one batch should last (the next doubles or halves). Default: maxAge/10. From 1 to maxAge/2. */
  batchPeriod?: number;
  /** How often a skipped endpoint is asked GET /readyz. Default: 250. From 10 to 60000. */
  probeEvery?: number;
  /** Strictly increasing IDs across the whole client, endpoint switches included (after= on every refill). Default: false. */
  strictlyIncreasing?: boolean;
}

/** How long a call may wait for a refill when nothing is buffered. */
export interface WaitOptions {
  /** Milliseconds: past them the call rejects with WaitTimeoutError. */
  timeout?: number;
  /** Aborting it rejects the call with the signal's reason. */
  signal?: AbortSignal;
}

/** The counters of one buffer: the IDs, or one sequence. Latencies in milliseconds. */
export interface StreamStats {
  served: number;
  fetched: number;
  buffered: number;
  batch: number;
  refills: number;
  refillFailures: number;
  throttled: number;
  refillLatencyTotal: number;
  refillLatencyMax: number;
  droppedByAge: number;
  waits: number;
  lastError: string;
}

/** One ticketd endpoint. */
export interface EndpointStats {
  url: string;
  up: boolean;
  current: boolean;
  requests: number;
  failures: number;
  rejected: number;
  probes: number;
  lastError: string;
  lastProbeError: string;
}

export interface Stats {
  ids: StreamStats;
  sequences: Record<string, StreamStats>;
  endpoints: EndpointStats[];
}

/** ticketd's client: IDs and sequence values from local buffers, refilled in the background. */
export class Client {
  constructor(options: ClientOptions);
  /** A snowflake ID: from the buffer, or after the next refill when it is empty. */
  next(opts?: WaitOptions): Promise<bigint>;
  /** A snowflake ID from the buffer, or undefined when none is buffered. Never waits. */
  tryNext(): bigint | undefined;
  /** n snowflake IDs; on failure the error's `values` holds those taken. */
  nextN(n: number, opts?: WaitOptions): Promise<bigint[]>;
  /** The named sequence's handle; throws BadNameError for a name ticketd would refuse. */
  sequence(name: string): Sequence;
  /** A value of the named sequence. */
  ticket(name: string, opts?: WaitOptions): Promise<bigint>;
  /** A value of the named sequence from its buffer, or undefined. */
  tryTicket(name: string): bigint | undefined;
  /** n values of the named sequence. */
  tickets(name: string, n: number, opts?: WaitOptions): Promise<bigint[]>;
  /** A copy of the client's counters. */
  stats(): Stats;
  /** Stops the client: waiting calls reject with ClosedError, requests are aborted, timers and sockets released. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** A named sequence's values: unique, not ordered, never aging. */
export class Sequence {
  private constructor();
  readonly name: string;
  next(opts?: WaitOptions): Promise<bigint>;
  tryNext(): bigint | undefined;
  nextN(n: number, opts?: WaitOptions): Promise<bigint[]>;
}

/** The package's version. */
export const version: string;

/** Defaults and bounds of the options (milliseconds for durations). */
export const limits: Readonly<{
  defaultCallTimeout: number;
  minCallTimeout: number;
  defaultMaxAge: number;
  minMaxAge: number;
  maxMaxAge: number;
  defaultMinBatch: number;
  defaultMaxBatch: number;
  maxMaxBatch: number;
  defaultMaxTicketBatch: number;
  minBatchPeriod: number;
  defaultProbeEvery: number;
  minProbeEvery: number;
  maxProbeEvery: number;
}>;

/** The base of the client's errors; `code` is stable, the message is not. */
export class TicketdError extends Error {
  readonly code: string;
  /** Values a nextN/tickets call took before it failed: valid and unique. */
  values: bigint[];
}
/** Nothing buffered and no endpoint could issue; `errors` holds each endpoint's last error. Code TICKETD_UNAVAILABLE. */
export class UnavailableError extends TicketdError {
  readonly errors: Error[];
}
/** An answer other than 200 (retryAfter in ms, 0 without one). Code TICKETD_STATUS. */
export class StatusError extends TicketdError {
  readonly endpoint: string;
  readonly status: number;
  readonly serverMessage: string;
  readonly retryAfter: number;
}
/** ticketd refused the request (4xx); not retried elsewhere. Code TICKETD_REJECTED. */
export class RejectedError extends StatusError {}
/** An answer that broke the binary format. Code TICKETD_BAD_ANSWER. */
export class BadAnswerError extends TicketdError {}
/** A sequence name ticketd would refuse; nothing sent. Code TICKETD_BAD_NAME. */
export class BadNameError extends TicketdError {}
/** An option outside its bounds. Code TICKETD_BAD_CONFIG. */
export class BadConfigError extends TicketdError {}
/** The client is closed. Code TICKETD_CLOSED. */
export class ClosedError extends TicketdError {}
/** The call's own timeout passed while it waited. Code TICKETD_WAIT_TIMEOUT. */
export class WaitTimeoutError extends TicketdError {}
/** A request to an endpoint passed its deadline (among UnavailableError's errors). Code TICKETD_REQUEST_TIMEOUT. */
export class RequestTimeoutError extends TicketdError {}
