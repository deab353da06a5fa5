"""The client's settings: docs/client.md ("Configuration"), in seconds."""

from __future__ import annotations

import re
import ssl
from dataclasses import dataclass, field
from typing import List, Optional, Sequence
from urllib.parse import urlsplit

from ._errors import BadConfigError

DEFAULT_CALL_TIMEOUT = 0.5
MIN_CALL_TIMEOUT = 0.001
DEFAULT_MAX_AGE = 1.0
MIN_MAX_AGE = 0.010
MAX_MAX_AGE = 3600.0
DEFAULT_MIN_BATCH = 16
DEFAULT_MAX_BATCH = 10_000
MAX_MAX_BATCH = 1_000_000
DEFAULT_MAX_TICKET_BATCH = 1_000
MIN_BATCH_PERIOD = 0.001
DEFAULT_PROBE_EVERY = 0.25
MIN_PROBE_EVERY = 0.010
MAX_PROBE_EVERY = 60.0

_TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*\Z")


@dataclass(frozen=True)
class Config:
    """A client's settings. Every field but ``endpoints`` has a default
    (None or 0 means the default); durations are in seconds."""

    endpoints: Sequence[str]
    token: str = field(default="", repr=False)
    ca_file: Optional[str] = None
    ssl_context: Optional[ssl.SSLContext] = None
    call_timeout: float = 0.0
    max_age: float = 0.0
    min_batch: int = 0
    max_batch: int = 0
    max_ticket_batch: int = 0
    batch_period: float = 0.0
    probe_every: float = 0.0
    strictly_increasing: bool = False

    def __repr__(self) -> str:  # the token is a secret
        return "Config(endpoints=%r, token=%s, ca_file=%r, call_timeout=%r, max_age=%r, min_batch=%r, " \
            "max_batch=%r, max_ticket_batch=%r, batch_period=%r, probe_every=%r, strictly_increasing=%r)" % (
                list(self.endpoints), "[redacted]" if self.token else "''", self.ca_file, self.call_timeout,
                self.max_age, self.min_batch, self.max_batch, self.max_ticket_batch, self.batch_period,
                self.probe_every, self.strictly_increasing)

    __str__ = __repr__


@dataclass(frozen=True)
class Settings:
    """A Config with its defaults filled in and checked."""

    bases: List[str]
    token: str
    ssl_context: Optional[ssl.SSLContext]
    call_timeout: float
    max_age: float
    min_batch: int
    max_batch: int
    max_ticket_batch: int
    batch_period: float
    probe_every: float
    strictly_increasing: bool


def settle(c: Config) -> Settings:
    """Fills in the defaults of c and checks every bound; raises
    BadConfigError."""
    if isinstance(c.endpoints, str) or not c.endpoints:
        raise BadConfigError("ticketd_client: no ticketd endpoint: want a list of base URLs")
    bases: List[str] = []
    for e in c.endpoints:
        try:
            u = urlsplit(e)
            u.port  # raises ValueError on a bad port
        except (ValueError, TypeError, AttributeError) as err:
            raise BadConfigError("ticketd_client: bad endpoint %r: %s" % (e, err)) from None
        if u.scheme not in ("http", "https"):
            raise BadConfigError("ticketd_client: bad endpoint %r: want an http:// or https:// URL" % (e,))
        if not u.hostname:
            raise BadConfigError("ticketd_client: bad endpoint %r: no host" % (e,))
        if u.query or u.fragment or u.username or u.password:
            raise BadConfigError("ticketd_client: bad endpoint %r: want a base URL without query, fragment or user" % (e,))
        base = e.rstrip("/")
        if base in bases:
            raise BadConfigError("ticketd_client: bad endpoint %r: given twice" % (e,))
        bases.append(base)
    max_age = c.max_age or DEFAULT_MAX_AGE
    call_timeout = c.call_timeout or min(DEFAULT_CALL_TIMEOUT, max_age / 2)
    max_batch = c.max_batch or max(DEFAULT_MAX_BATCH, c.min_batch)
    min_batch = c.min_batch or min(DEFAULT_MIN_BATCH, max_batch)
    max_ticket_batch = c.max_ticket_batch or DEFAULT_MAX_TICKET_BATCH
    batch_period = c.batch_period or max_age / 10
    probe_every = c.probe_every or DEFAULT_PROBE_EVERY

    def bad(msg: str) -> BadConfigError:
        return BadConfigError("ticketd_client: bad config: " + msg)

    if not MIN_MAX_AGE <= max_age <= MAX_MAX_AGE:
        raise bad("max_age %r: want %r to %r seconds" % (max_age, MIN_MAX_AGE, MAX_MAX_AGE))
    if not MIN_CALL_TIMEOUT <= call_timeout <= max_age:
        raise bad("call_timeout %r: want %r to max_age (%r) seconds" % (call_timeout, MIN_CALL_TIMEOUT, max_age))
    if not 1 <= min_batch <= max_batch <= MAX_MAX_BATCH:
        raise bad("min_batch %r, max_batch %r: want 1 <= min_batch <= max_batch <= %d" % (min_batch, max_batch, MAX_MAX_BATCH))
    if not 1 <= max_ticket_batch <= MAX_MAX_BATCH:
        raise bad("max_ticket_batch %r: want 1 to %d" % (max_ticket_batch, MAX_MAX_BATCH))
    if not MIN_BATCH_PERIOD <= batch_period <= max_age / 2:
        raise bad("batch_period %r: want %r to max_age/2 (%r) seconds" % (batch_period, MIN_BATCH_PERIOD, max_age / 2))
    if not MIN_PROBE_EVERY <= probe_every <= MAX_PROBE_EVERY:
        raise bad("probe_every %r: want %r to %r seconds" % (probe_every, MIN_PROBE_EVERY, MAX_PROBE_EVERY))
    if c.token and not _TOKEN.match(c.token):
        raise bad("token: want letters, digits and - . _ ~ + / (then optional =), as ticketd's tokens are")
    if c.ca_file and c.ssl_context is not None:
        raise bad("ca_file with ssl_context: load the CAs into the context instead")
    ctx = c.ssl_context
    if ctx is None and any(b.startswith("https://") for b in bases):
        try:
            ctx = ssl.create_default_context(cafile=c.ca_file)
        except (OSError, ssl.SSLError) as err:
            raise bad("ca_file %r: %s" % (c.ca_file, err)) from None
        ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    return Settings(bases=bases, token=c.token, ssl_context=ctx, call_timeout=call_timeout, max_age=max_age,
                    min_batch=min_batch, max_batch=max_batch, max_ticket_batch=max_ticket_batch,
                    batch_period=batch_period, probe_every=probe_every,
                    strictly_increasing=c.strictly_increasing)
