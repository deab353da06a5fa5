"""The errors of the client, one class per kind of docs/client.md ("Errors")."""

from __future__ import annotations

from typing import Optional


class TicketdError(Exception):
    """Every error the client raises derives from this class."""


class BadConfigError(TicketdError, ValueError):
    """A setting outside its bounds, raised when the client is created."""


class UnavailableError(TicketdError):
    """Nothing buffered and no endpoint could issue: the message names every
    endpoint and its last error."""


class _AnswerError(TicketdError):
    """An answer other than 200: the endpoint, the HTTP status, ticketd's
    message and the answer's Retry-After (seconds, 0 without one)."""

    def __init__(self, endpoint: str, status: int, message: str, retry_after: float = 0.0) -> None:
        super().__init__("ticketd_client: %s answered %d: %s" % (endpoint, status, message))
        self.endpoint = endpoint
        self.status = status
        self.message = message
        self.retry_after = retry_after

    def __reduce__(self):  # type: ignore[no-untyped-def]  # copy and pickle
        return (type(self), (self.endpoint, self.status, self.message, self.retry_after))


class RejectedError(_AnswerError):
    """ticketd refused the request itself (a 4xx answer): ``status`` is the
    HTTP status and ``message`` ticketd's own message."""


class BadNameError(TicketdError, ValueError):
    """A sequence name ticketd would refuse; no request was sent."""


class ClosedError(TicketdError):
    """The client is closed."""


class BadAnswerError(TicketdError):
    """An answer that breaks the wire format."""


class DeadlineError(TicketdError, TimeoutError):
    """The caller's own timeout ended while the call waited for a refill."""


class StatusError(_AnswerError):
    """An answer other than 200 that is not the request's fault (5xx): the
    endpoint failed."""


def throttled(err: Optional[BaseException]) -> Optional[float]:
    """The pause a 429 asks for (its Retry-After, else 1 s), or None for any
    other error."""
    if isinstance(err, RejectedError) and err.status == 429:
        return err.retry_after if err.retry_after > 0 else 1.0
    return None
