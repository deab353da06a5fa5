// The errors the client throws. Every one is a TicketdError with a stable
// `code`; test with `instanceof` or `err.code`, never with the message.

/** The base of the client's errors. */
export class TicketdError extends Error {
  /**
   * @param {string} message
   * @param {string} code
   * @param {ErrorOptions} [options]
   */
  constructor(message, code, options) {
    super(message, options);
    this.name = new.target.name;
    /** @type {string} */
    this.code = code;
    /**
     * Values a `nextN`/`tickets` call took before it failed: valid and unique.
     * @type {bigint[]}
     */
    this.values = [];
  }
}

/**
 * Nothing was buffered and no endpoint could issue: a refill that ended while
 * the call waited tried every endpoint and failed. `errors` holds each
 * endpoint's last error; the message names them.
 */
export class UnavailableError extends TicketdError {
  /** @param {string} message @param {Error[]} errors */
  constructor(message, errors) {
    super(message, 'TICKETD_UNAVAILABLE');
    /** @type {Error[]} */
    this.errors = errors;
  }
}

/**
 * An answer other than 200. A 4xx is a RejectedError; a 5xx only appears
 * among an UnavailableError's errors (the client tries the other endpoints).
 */
export class StatusError extends TicketdError {
  /**
   * @param {string} endpoint @param {number} status @param {string} serverMessage
   * @param {number} retryAfter milliseconds, 0 without a Retry-After
   * @param {string} [code]
   */
  constructor(endpoint, status, serverMessage, retryAfter, code = 'TICKETD_STATUS') {
    super(`ticketd: ${endpoint} answered ${status}: ${serverMessage}`, code);
    this.endpoint = endpoint;
    this.status = status;
    this.serverMessage = serverMessage;
    this.retryAfter = retryAfter;
  }
}

/**
 * ticketd refused the request itself (4xx): an unknown or exhausted sequence,
 * a batch above its -max-batch, no token or an unknown one (401), a token
 * without the scope (403). Not retried elsewhere. Over a token's quota (429)
 * is never thrown: the client is paced instead.
 */
export class RejectedError extends StatusError {
  /** @param {string} endpoint @param {number} status @param {string} serverMessage @param {number} retryAfter */
  constructor(endpoint, status, serverMessage, retryAfter) {
    super(endpoint, status, serverMessage, retryAfter, 'TICKETD_REJECTED');
  }
}

/** An answer that is not a batch in the binary format; the endpoint is skipped. */
export class BadAnswerError extends TicketdError {
  /** @param {string} message */
  constructor(message) {
    super(`ticketd: malformed answer: ${message}`, 'TICKETD_BAD_ANSWER');
  }
}

/** A sequence name ticketd would refuse; no request is sent. */
export class BadNameError extends TicketdError {
  /** @param {string} name */
  constructor(name) {
    const shown = String(name).slice(0, 64);
    super(`ticketd: bad sequence name ${JSON.stringify(shown)}: want a lowercase letter, then up to 47 lowercase letters, digits or underscores`, 'TICKETD_BAD_NAME');
  }
}

/** A setting outside its bounds, when the client is created. */
export class BadConfigError extends TicketdError {
  /** @param {string} message */
  constructor(message) {
    super(`ticketd: bad config: ${message}`, 'TICKETD_BAD_CONFIG');
  }
}

/** The client is closed. */
export class ClosedError extends TicketdError {
  constructor() {
    super('ticketd: client closed', 'TICKETD_CLOSED');
  }
}

/** The call's own `timeout` passed while it waited for a refill. */
export class WaitTimeoutError extends TicketdError {
  /** @param {string} message */
  constructor(message) {
    super(message, 'TICKETD_WAIT_TIMEOUT');
  }
}

/** A request that took longer than its deadline. */
export class RequestTimeoutError extends TicketdError {
  /** @param {number} ms */
  constructor(ms) {
    super(`no answer within ${ms} ms`, 'TICKETD_REQUEST_TIMEOUT');
  }
}
