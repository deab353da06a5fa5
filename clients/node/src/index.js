// ticketd's Node.js client: snowflake IDs and named-sequence values from a
// local buffer, refilled from ticketd in the background. No dependency.
export { Client, Sequence, version } from './client.js';
export {
  TicketdError, UnavailableError, StatusError, RejectedError, BadAnswerError, BadNameError, BadConfigError,
  ClosedError, WaitTimeoutError, RequestTimeoutError,
} from './errors.js';
export { limits } from './config.js';
