"""The client: buffers of IDs and sequence values, refilled in the background
from the first ticketd that answers (docs/client.md)."""

from __future__ import annotations

import copy
import re
import threading
import time
from collections import deque
from typing import Any, Deque, Dict, List, Optional, Sequence, Tuple

from ._config import Config, Settings, settle
from ._errors import (BadAnswerError, BadNameError, ClosedError, DeadlineError, RejectedError, StatusError,
                      UnavailableError, throttled)
from ._http import Transport
from ._pool import Pool

_NAME = re.compile(r"[a-z][a-z0-9_]{0,47}\Z")
_MAX_INT64 = (1 << 63) - 1

# The threads that refill a client's sequences, all of them together: a
# thread per sequence would grow without bound with the names asked for.
# More than one, so that a slow sequence holds up no other.
SEQUENCE_REFILLS = 4


class _Endpoint:
    __slots__ = ("base", "up", "last_err", "probe_err", "requests", "failures", "rejected", "probes")

    def __init__(self, base: str) -> None:
        self.base = base
        self.up = True
        self.last_err: Optional[BaseException] = None
        self.probe_err: Optional[BaseException] = None
        self.requests = 0
        self.failures = 0
        self.rejected = 0
        self.probes = 0


class _Segment:
    """One batch from one endpoint."""

    __slots__ = ("vals", "pos", "expires")

    def __init__(self, vals: Any, expires: float) -> None:
        self.vals = vals
        self.pos = 0
        self.expires = expires


class _Stream:
    """One buffered source of values (the IDs, or one sequence): a queue of
    batches under a lock never held across I/O, and one refill in flight at
    a time: on a thread of its own (the IDs), or on the client's pool of
    sequence refills."""

    def __init__(self, c: "Client", name: str, path: str, ids: bool, min_batch: int, max_batch: int) -> None:
        self.c = c
        self.name = name
        self.path = path
        self.ids = ids
        self.min_batch = min_batch
        self.max_batch = max_batch
        self.strict = ids and c._s.strictly_increasing
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        self.wake = threading.Event()
        self.segs: Deque[_Segment] = deque()
        self.buffered = 0
        self.batch = min_batch
        self.last_sent = 0.0
        self.sent_any = False
        self.slow_fetch = False
        self.used = False
        self.started = 0
        self.ended = 0
        self.last_err: Optional[BaseException] = None
        self.paced = False
        self.last_out = 0
        self.max_fetched = 0
        self.served = self.fetched = self.refills = self.refill_failures = 0
        self.dropped_by_age = self.waits = self.throttled = 0
        self.refill_total = self.refill_max = 0.0
        self.thread: Optional[threading.Thread] = None
        if ids:
            self.thread = threading.Thread(target=self._refill_loop, daemon=True, name="ticketd-refill")

    def kick(self) -> None:
        """Asks for a refill's turn: it looks at the buffer and refills it
        if it needs it."""
        if self.thread is not None:
            self.wake.set()
        else:
            self.c._pool.kick(self)

    # --- handing out -------------------------------------------------------

    def one(self, deadline: Optional[float]) -> int:
        now = time.monotonic()
        with self.lock:
            if self.segs:
                seg = self.segs[0]
                if now < seg.expires:
                    v: int = seg.vals[seg.pos]
                    if not self.strict or v > self.last_out:
                        seg.pos += 1
                        self.buffered -= 1
                        self.served += 1
                        self.last_out = v
                        if seg.pos == len(seg.vals):
                            self.segs.popleft()
                        if not self.used or self.buffered < self.batch:
                            self.used = True
                            self.kick()
                        return v
        return self.take(1, deadline)[0]

    def take(self, n: int, deadline: Optional[float]) -> List[int]:
        out: List[int] = []
        waited = False
        wait_for = 0
        with self.lock:
            while True:
                self._drop_expired(time.monotonic())
                while len(out) < n and self.segs:
                    seg = self.segs[0]
                    if self.strict:
                        while seg.pos < len(seg.vals) and seg.vals[seg.pos] <= self.last_out:
                            seg.pos += 1
                            self.buffered -= 1
                    k = min(n - len(out), len(seg.vals) - seg.pos)
                    if k > 0:
                        out.extend(seg.vals[seg.pos:seg.pos + k])
                        seg.pos += k
                        self.buffered -= k
                        self.served += k
                        self.last_out = max(self.last_out, out[-1])
                    if seg.pos == len(seg.vals):
                        self.segs.popleft()
                wake = self.buffered < self.batch or (bool(out) and not self.used)
                self.used = self.used or bool(out)
                if len(out) == n:
                    if wake:
                        self.kick()
                    return out
                if self.c._closed:
                    raise ClosedError("ticketd_client: closed")
                if waited and self.ended >= wait_for and self.last_err is not None and not self.paced:
                    # A refill that ended while this call waited failed: it
                    # tried every endpoint. Callers that wait together share
                    # it, and a call that came during a refill waits for that
                    # one only, not for the next as well.
                    raise copy.copy(self.last_err)
                if not waited:
                    waited, wait_for = True, self.ended + 1
                    self.waits += 1
                # A refill under way will end and wake this call: asking for
                # another would only start one nobody waits for once it
                # failed. Under the lock, so that the refill's own clearing of
                # the kicks (it began after this call looked) cannot miss it.
                if self.started == self.ended:
                    self.kick()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    raise DeadlineError("ticketd_client: waiting for a refill of %s: timed out" % self.path)
                self.arrived.wait(left)

    def _drop_expired(self, now: float) -> bool:
        dropped = False
        while self.segs and now >= self.segs[0].expires:
            seg = self.segs.popleft()
            left = len(seg.vals) - seg.pos
            self.dropped_by_age += left
            self.buffered -= left
            dropped = True
        return dropped

    # --- refilling ---------------------------------------------------------

    def _refill_loop(self) -> None:
        """The IDs' refill thread."""
        c = self.c
        while not c._closed:
            self.wake.clear()
            wait, paused = self.turn()
            if paused:
                if c._done.wait(wait):
                    return
            elif wait != 0:
                self.wake.wait(wait)

    def turn(self) -> Tuple[Optional[float], bool]:
        """Refills the buffer if it needs it. Returns when to look again:
        (0.0, False) at once, (None, False) when kicked, (seconds, False)
        after that or when kicked, (seconds, True) after a pause over a
        token's quota (asking before Retry-After would only be refused
        again)."""
        wait, need = self._plan()
        if not need:
            return wait, False
        err = self._refill()
        if err is None:
            return 0.0, False
        p = throttled(err)
        if p is not None:
            return p, True
        return None, False  # failed: again only when asked (a caller, a rejoin)

    def _plan(self) -> Tuple[Optional[float], bool]:
        now = time.monotonic()
        with self.lock:
            self._drop_expired(now)
            if self.buffered < self.batch:
                return 0.0, True
            if not self.ids or not self.used or not self.segs:
                return None, False
            refresh_at = self.segs[-1].expires - self.c._s.max_age / 4
            if now >= refresh_at:
                return 0.0, True
            return refresh_at - now, False

    def _refill(self) -> Optional[BaseException]:
        c, s = self.c, self.c._s
        with self.lock:
            self.started += 1
            attempt = self.started
            # The kicks that came before now are this refill's to answer:
            # callers waiting get its outcome, whatever it is.
            if self.thread is not None:
                self.wake.clear()
            else:
                c._pool.settle(self)
            now = time.monotonic()
            if self.sent_any:  # Leaf's step
                lasted = now - self.last_sent
                if self.slow_fetch:
                    self.batch = max(self.batch // 2, self.min_batch)
                elif lasted < s.batch_period:
                    self.batch = min(self.batch * 2, self.max_batch)
                elif lasted > 2 * s.batch_period:
                    self.batch = max(self.batch // 2, self.min_batch)
            n = self.batch
            path = self.path
            if self.strict and self.max_fetched > 0:
                path += "?after=%d" % self.max_fetched
            after = self.max_fetched
        order, last_resort = c._pick()
        err: Optional[BaseException] = None
        for _ in range(2):
            timeout = s.max_age if last_resort else s.call_timeout
            for i in order:
                sent = time.monotonic()
                try:
                    vals = self._fetch(i, timeout, path, n, after)
                except ClosedError as e:
                    return e
                except Exception as e:  # noqa: BLE001 - every failure of an endpoint
                    err = e
                    if c._closed:
                        return ClosedError("ticketd_client: closed")
                    if isinstance(e, RejectedError) and e.status != 429:
                        break  # every ticketd would refuse it
                    continue
                self._append(vals, sent, attempt)
                return None
            if last_resort or (isinstance(err, RejectedError) and err.status != 429):
                break
            order, last_resort = c._all(), True
        if not isinstance(err, RejectedError):
            err = c._unavailable()
        with self.lock:
            self.refill_failures += 1
            self.last_err = err
            self.paced = throttled(err) is not None
            if self.paced:
                self.throttled += 1
            self.batch = max(self.batch // 2, self.min_batch)
            self.ended = attempt
            self.arrived.notify_all()
        return err

    def _fetch(self, i: int, timeout: float, path: str, n: int, after: int) -> Any:
        c = self.c
        base = c._eps[i].base
        try:
            vals = c._tr.get(base, path, n, timeout)
            if self.ids:
                prev = after if self.strict else 0
                for v in vals:
                    if v == 0 or v > _MAX_INT64:
                        raise BadAnswerError("ticketd_client: ID %d is not a positive int64" % v)
                    if v <= prev:
                        raise BadAnswerError("ticketd_client: ID %d after %d: a batch must increase (and lie above after=)" % (v, prev))
                    prev = v
        except ClosedError:
            raise
        except Exception as e:  # noqa: BLE001
            if c._closed:
                raise ClosedError("ticketd_client: closed") from None
            c._failed(i, e, _skips(self.ids, e))
            raise
        c._succeeded(i)
        return vals

    def _append(self, vals: Any, sent: float, attempt: int) -> None:
        took = time.monotonic() - sent
        with self.lock:
            expires = sent + self.c._s.max_age if self.ids else float("inf")
            self.segs.append(_Segment(vals, expires))
            if self.ids:
                self.max_fetched = max(self.max_fetched, vals[-1])
            self.buffered += len(vals)
            self.fetched += len(vals)
            self.refills += 1
            self.refill_total += took
            self.refill_max = max(self.refill_max, took)
            self.last_sent, self.sent_any, self.used = sent, True, False
            self.slow_fetch = took > self.c._s.call_timeout / 4
            self.last_err, self.paced = None, False
            self.ended = attempt
            self.arrived.notify_all()

    def stats(self) -> Dict[str, Any]:
        with self.lock:
            if self._drop_expired(time.monotonic()) and self.buffered < self.batch:
                self.kick()
            return {"served": self.served, "fetched": self.fetched, "buffered": self.buffered, "batch": self.batch,
                    "refills": self.refills, "refill_failures": self.refill_failures, "throttled": self.throttled,
                    "refill_latency_total": self.refill_total, "refill_latency_max": self.refill_max,
                    "dropped_by_age": self.dropped_by_age, "waits": self.waits,
                    "last_error": str(self.last_err) if self.last_err else ""}


def _skips(ids: bool, err: BaseException) -> bool:
    """Whether a failed refill takes the endpoint out: a 4xx is the request's
    fault; for a sequence, a slow or 5xx answer is the ticket servers'."""
    if isinstance(err, RejectedError):
        return False
    if ids:
        return True
    return not isinstance(err, (StatusError, TimeoutError))


class Client:
    """Hands out snowflake IDs (next) and values of named sequences (ticket)
    from local buffers, refilled from ticketd in the background. Safe for
    concurrent use by any number of threads. Close it (close(), or a with
    block) to stop its threads and connections.

    Settings (docs/client.md, "Configuration"; durations in seconds, 0 or
    None meaning the default): token, ca_file or ssl_context, call_timeout,
    max_age, min_batch, max_batch, max_ticket_batch, batch_period,
    probe_every, strictly_increasing."""

    def __init__(self, endpoints: Sequence[str], *, token: str = "", ca_file: Optional[str] = None,
                 ssl_context: Any = None, call_timeout: float = 0.0, max_age: float = 0.0, min_batch: int = 0,
                 max_batch: int = 0, max_ticket_batch: int = 0, batch_period: float = 0.0,
                 probe_every: float = 0.0, strictly_increasing: bool = False) -> None:
        self.config = Config(endpoints=list(endpoints) if not isinstance(endpoints, str) else endpoints,
                             token=token, ca_file=ca_file, ssl_context=ssl_context,
                             call_timeout=call_timeout, max_age=max_age, min_batch=min_batch, max_batch=max_batch,
                             max_ticket_batch=max_ticket_batch, batch_period=batch_period,
                             probe_every=probe_every, strictly_increasing=strictly_increasing)
        self._s: Settings = settle(self.config)
        self._tr = Transport(self._s)
        self._closed = False
        self._done = threading.Event()
        self._probe_now = threading.Event()
        self._elock = threading.Lock()
        self._eps = [_Endpoint(b) for b in self._s.bases]
        self._cur = 0
        self._slock = threading.Lock()
        self._seqs: Dict[str, _Stream] = {}
        self._pool = Pool(SEQUENCE_REFILLS, "ticketd-refill-seq")
        self._ids = _Stream(self, "", "/v1/ids", True, self._s.min_batch, self._s.max_batch)
        t = self._ids.thread
        assert t is not None
        self._ids_thread: threading.Thread = t
        self._prober = threading.Thread(target=self._probe_loop, daemon=True, name="ticketd-probe")
        self._ids_thread.start()
        self._prober.start()
        self._ids.kick()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Client(%r)" % (self.config,)

    # --- the API -----------------------------------------------------------

    def next(self, timeout: Optional[float] = None) -> int:
        """A snowflake ID from the buffer. Waits only when the buffer is empty,
        at most timeout seconds (None: until a refill ends)."""
        if self._closed:
            raise ClosedError("ticketd_client: closed")
        return self._ids.one(_deadline(timeout))

    def next_n(self, n: int, timeout: Optional[float] = None) -> List[int]:
        """n snowflake IDs, in increasing order while the client stays on one
        ticketd."""
        if self._closed:
            raise ClosedError("ticketd_client: closed")
        return self._ids.take(n, _deadline(timeout)) if n > 0 else []

    def ticket(self, name: str, timeout: Optional[float] = None) -> int:
        """A value of the named sequence (GET /v1/tickets/NAME), from a buffer
        of its own. Values are unique, not ordered."""
        return self._sequence(name).one(_deadline(timeout))

    def tickets(self, name: str, n: int, timeout: Optional[float] = None) -> List[int]:
        """n values of the named sequence."""
        s = self._sequence(name)
        return s.take(n, _deadline(timeout)) if n > 0 else []

    def stats(self) -> Dict[str, Any]:
        """Counters for an application to export (docs/client.md, "Stats"):
        "ids", "sequences" (by name) and "endpoints" (in the configured
        order); latencies in seconds."""
        with self._slock:
            seqs = dict(self._seqs)
        with self._elock:
            eps = [{"url": e.base, "up": e.up, "current": i == self._cur, "requests": e.requests,
                    "failures": e.failures, "rejected": e.rejected, "probes": e.probes,
                    "last_error": str(e.last_err) if e.last_err else "",
                    "last_probe_error": str(e.probe_err) if e.probe_err else ""} for i, e in enumerate(self._eps)]
        return {"ids": self._ids.stats(), "sequences": {k: v.stats() for k, v in seqs.items()}, "endpoints": eps}

    def close(self) -> None:
        """Stops the client: callers waiting for a refill get ClosedError,
        requests in flight are aborted, and every thread the client started
        has ended when close returns. Buffered values are dropped (gaps,
        never repeats). Idempotent."""
        with self._slock:
            if self._closed:
                return
            self._closed = True
            streams = [self._ids] + list(self._seqs.values())
        self._done.set()
        self._probe_now.set()
        self._tr.close()
        self._ids.wake.set()
        for s in streams:
            with s.lock:
                s.arrived.notify_all()
        self._pool.close()
        for t in [self._ids_thread, self._prober]:
            if t is not threading.current_thread() and t.ident is not None:
                t.join()
        for s in streams:
            with s.lock:
                s.segs.clear()
                s.buffered = 0
        self._tr.release()

    # --- endpoints ---------------------------------------------------------

    def _sequence(self, name: str) -> _Stream:
        s = self._seqs.get(name)
        if s is not None:
            return s
        if not isinstance(name, str) or not _NAME.match(name):
            raise BadNameError("ticketd_client: bad sequence name %r: want a lowercase letter, then up to 47 "
                               "lowercase letters, digits or underscores" % (str(name)[:64],))
        with self._slock:
            if self._closed:
                raise ClosedError("ticketd_client: closed")
            s = self._seqs.get(name)
            if s is None:
                s = _Stream(self, name, "/v1/tickets/" + name, False, 1, self._s.max_ticket_batch)
                self._seqs[name] = s
            return s

    def _pick(self) -> Tuple[List[int], bool]:
        """The endpoints a refill tries: the current one, then the others that
        are up, in order; all of them (last resort) when none is up."""
        with self._elock:
            order = [self._cur] if self._eps[self._cur].up else []
            order += [i for i, e in enumerate(self._eps) if i != self._cur and e.up]
            if order:
                return order, False
        return self._all(), True

    def _all(self) -> List[int]:
        with self._elock:
            return [self._cur] + [i for i in range(len(self._eps)) if i != self._cur]

    def _succeeded(self, i: int) -> None:
        with self._elock:
            e = self._eps[i]
            e.requests += 1
            e.up, e.probe_err = True, None
            self._cur = i

    def _failed(self, i: int, err: BaseException, skip: bool) -> None:
        """A request to endpoint i failed. A 4xx is the request's fault, not
        the endpoint's: it counts as rejected, neither as a failure nor as
        the endpoint's last error."""
        with self._elock:
            e = self._eps[i]
            e.requests += 1
            if isinstance(err, RejectedError):
                e.rejected += 1
                return
            e.failures += 1
            e.last_err = err
            down = skip and e.up
            if down:
                e.up = False
        if down:
            self._probe_now.set()

    def _unavailable(self) -> UnavailableError:
        with self._elock:
            parts = []
            for e in self._eps:
                p = "%s (%s): %s" % (e.base, "up" if e.up else "down", _describe(e.last_err) if e.last_err else "no error yet")
                if e.probe_err is not None:
                    p += "; then probe: " + _describe(e.probe_err)
                parts.append(p)
        return UnavailableError("ticketd_client: no ticketd could issue: " + "; ".join(parts))

    def _probe_loop(self) -> None:
        while not self._closed:
            self._probe_now.wait(self._s.probe_every)
            self._probe_now.clear()
            if self._closed:
                return
            with self._elock:
                down = [i for i, e in enumerate(self._eps) if not e.up]
            if not down:
                continue
            errs: List[Optional[BaseException]] = [None] * len(down)

            def probe(k: int, i: int) -> None:
                try:
                    self._tr.probe(self._eps[i].base, self._s.call_timeout)
                except Exception as e:  # noqa: BLE001
                    errs[k] = e

            threads = [threading.Thread(target=probe, args=(k, i), daemon=True, name="ticketd-probe-one")
                       for k, i in enumerate(down)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            rejoined = False
            with self._elock:
                for k, i in enumerate(down):
                    e = self._eps[i]
                    e.probes += 1
                    if errs[k] is None:
                        e.up, e.probe_err, rejoined = True, None, True
                    else:
                        e.probe_err = errs[k]
            if rejoined:
                with self._slock:
                    streams = [self._ids] + list(self._seqs.values())
                for s in streams:
                    s.kick()


def _deadline(timeout: Optional[float]) -> Optional[float]:
    return None if timeout is None else time.monotonic() + timeout


def _describe(err: BaseException) -> str:
    return str(err) or type(err).__name__
