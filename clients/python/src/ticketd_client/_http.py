"""The wire: docs/client.md ("The wire"), over http.client, keep-alive."""

from __future__ import annotations

import array
import http.client
import json
import socket
import sys
import threading
import time
from typing import Dict, List, Optional, Set
from urllib.parse import urlsplit

from ._config import Settings
from ._errors import BadAnswerError, ClosedError, RejectedError, StatusError

MAX_ERROR_BODY = 4 << 10
MAX_RETRY_AFTER = 60.0


class Transport:
    """Batches of values and readiness probes from the endpoints. Safe for
    concurrent use: each request takes a connection of its own from a pool
    per endpoint. close() aborts the requests in flight."""

    def __init__(self, s: Settings) -> None:
        self._auth = "Bearer " + s.token if s.token else ""
        self._ctx = s.ssl_context
        self._lock = threading.Lock()
        self._idle: Dict[str, List[http.client.HTTPConnection]] = {}
        self._active: Set[http.client.HTTPConnection] = set()
        self._closed = False

    def _connect(self, base: str, timeout: float) -> http.client.HTTPConnection:
        with self._lock:
            if self._closed:
                raise ClosedError("ticketd_client: closed")
            idle = self._idle.get(base)
            conn = idle.pop() if idle else None
            if conn is None:
                u = urlsplit(base)
                if u.scheme == "https":
                    conn = http.client.HTTPSConnection(u.hostname or "", u.port, timeout=timeout, context=self._ctx)
                else:
                    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=timeout)
            self._active.add(conn)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def _release(self, base: str, conn: http.client.HTTPConnection, reuse: bool) -> None:
        with self._lock:
            self._active.discard(conn)
            if reuse and not self._closed:
                self._idle.setdefault(base, []).append(conn)
                return
        conn.close()

    def _request(self, base: str, path: str, timeout: float, auth: bool,
                 want: int) -> bytes:
        """GET base+path within timeout; returns the body of a 200 of at most
        want bytes (reading want+1 to tell a longer one), else raises."""
        deadline = time.monotonic() + timeout
        conn = self._connect(base, timeout)
        reuse = False
        try:
            headers = {"Accept": "application/octet-stream"}
            if auth and self._auth:
                headers["Authorization"] = self._auth
            conn.request("GET", path, headers=headers)
            resp = conn.getresponse()
            left = deadline - time.monotonic()
            if left <= 0:
                raise socket.timeout("timed out")
            if conn.sock is not None:
                conn.sock.settimeout(left)
            if resp.status != 200:
                body = resp.read(MAX_ERROR_BODY)
                raise _status_error(base, resp, body)
            body = resp.read(want + 1)
            reuse = not resp.will_close and resp.isclosed()
            ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
            if want and ctype != "application/octet-stream":
                raise BadAnswerError("ticketd_client: Content-Type %r, want application/octet-stream" % ctype)
            return body
        except (OSError, http.client.HTTPException) as err:
            if self._closed:
                raise ClosedError("ticketd_client: closed") from None
            if isinstance(err, socket.timeout):
                raise TimeoutError("%s: no answer within %.3f s" % (base, timeout)) from None
            raise
        finally:
            self._release(base, conn, reuse)

    def get(self, base: str, path: str, n: int, timeout: float) -> "array.array[int]":
        """n values of path (/v1/ids or /v1/tickets/NAME, perhaps with
        ?after=X) from base, in the binary format."""
        sep = "&" if "?" in path else "?"
        body = self._request(base, "%s%sformat=binary&n=%d" % (path, sep, n), timeout, True, 8 * n)
        if len(body) != 8 * n:
            raise BadAnswerError("ticketd_client: %d bytes for %d values, want %d" % (len(body), n, 8 * n))
        vals = array.array("Q")
        vals.frombytes(body)
        if sys.byteorder == "little":
            vals.byteswap()
        return vals

    def probe(self, base: str, timeout: float) -> None:
        """Raises unless base answers GET /readyz with 200."""
        self._request(base, "/readyz", timeout, False, 0)

    def close(self) -> None:
        """Aborts every request in flight and closes every connection."""
        with self._lock:
            self._closed = True
            conns = list(self._active) + [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for c in conns:
            sock = c.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            c.close()


def _status_error(base: str, resp: http.client.HTTPResponse, body: bytes) -> Exception:
    msg = body.decode("utf-8", "replace").strip()
    try:
        doc = json.loads(body)
        if isinstance(doc, dict) and isinstance(doc.get("error"), str) and doc["error"]:
            msg = doc["error"]
    except ValueError:
        pass
    if len(msg) > 200:
        msg = msg[:200] + "…"
    retry_after = 0.0
    try:
        sec = int((resp.getheader("Retry-After") or "").strip())
        if sec > 0:
            retry_after = min(float(sec), MAX_RETRY_AFTER)
    except ValueError:
        pass
    if 400 <= resp.status < 500:
        return RejectedError(base, resp.status, msg, retry_after)
    return StatusError(base, resp.status, msg, retry_after)
