"""The wire: docs/client.md ("The wire"), over http.client, keep-alive."""

from __future__ import annotations

import array
import errno
import http.client
import json
import os
import selectors
import socket
import ssl
import sys
import threading
import time
from typing import Dict, List, Optional, Set
from urllib.parse import urlsplit

from ._config import Settings
from ._errors import BadAnswerError, ClosedError, RejectedError, StatusError

MAX_ERROR_BODY = 4 << 10
MAX_RETRY_AFTER = 60.0
# What connect_ex answers on a non-blocking socket whose connect goes on.
_IN_PROGRESS = {errno.EINPROGRESS, errno.EWOULDBLOCK, errno.EAGAIN, getattr(errno, "WSAEWOULDBLOCK", errno.EAGAIN)}


class _Conn(http.client.HTTPConnection):
    """An HTTP/1.1 connection whose connect and TLS handshake close() can
    abort: http.client's own makes its socket inside
    socket.create_connection and shakes hands inside wrap_socket, where no
    other thread can reach it, so a SYN nobody answers or a handshake that
    stalls held close() for the whole call timeout."""

    def __init__(self, tr: "Transport", host: str, port: int, timeout: float, tls: Optional[ssl.SSLContext]) -> None:
        super().__init__(host, port, timeout=timeout)
        self.default_port = 443 if tls is not None else 80  # the Host header names only another port
        self._tr = tr
        self._tls = tls

    def connect(self) -> None:
        self.sock = self._tr._open(self.host, self.port, float(self.timeout or 0), self._tls)  # set per request


class Transport:
    """Batches of values and readiness probes from the endpoints. Safe for
    concurrent use: each request takes a connection of its own from a pool
    per endpoint. close() aborts the requests in flight, those still
    connecting included."""

    def __init__(self, s: Settings) -> None:
        self._auth = "Bearer " + s.token if s.token else ""
        self._ctx = s.ssl_context
        self._lock = threading.Lock()
        self._idle: Dict[str, List[http.client.HTTPConnection]] = {}
        self._active: Set[http.client.HTTPConnection] = set()
        self._closed = False
        # Connects and handshakes wait on their socket and on _abort_r, which
        # turns readable (end of file) when close() closes _abort_w.
        self._abort_r, self._abort_w = socket.socketpair()

    def _connect(self, base: str, timeout: float) -> http.client.HTTPConnection:
        with self._lock:
            if self._closed:
                raise ClosedError("ticketd_client: closed")
            idle = self._idle.get(base)
            conn = idle.pop() if idle else None
            if conn is None:
                u = urlsplit(base)
                https = u.scheme == "https"
                tls = (self._ctx or ssl.create_default_context()) if https else None
                conn = _Conn(self, u.hostname or "", u.port or (443 if https else 80), timeout, tls)
            self._active.add(conn)
        conn.timeout = timeout
        if conn.sock is not None:
            conn.sock.settimeout(timeout)
        return conn

    def _open(self, host: str, port: int, timeout: float, tls: Optional[ssl.SSLContext]) -> socket.socket:
        """A socket connected to host:port (and through TLS when tls is
        given) within timeout, ready for http.client (blocking, with
        timeout). Raises socket.timeout past it, ClosedError when close()
        came meanwhile."""
        deadline = time.monotonic() + timeout
        err: Optional[BaseException] = None
        for family, kind, proto, _, addr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
            sock = socket.socket(family, kind, proto)
            try:
                sock.setblocking(False)
                e = sock.connect_ex(addr)
                if e in _IN_PROGRESS:
                    self._wait(sock, selectors.EVENT_WRITE, deadline)
                    e = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR)
                if e:
                    raise OSError(e, os.strerror(e))
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                if tls is not None:
                    sock = tls.wrap_socket(sock, server_hostname=host, do_handshake_on_connect=False)
                    while True:
                        try:
                            sock.do_handshake()
                            break
                        except ssl.SSLWantReadError:
                            self._wait(sock, selectors.EVENT_READ, deadline)
                        except ssl.SSLWantWriteError:
                            self._wait(sock, selectors.EVENT_WRITE, deadline)
                sock.settimeout(max(deadline - time.monotonic(), 0.001))
                return sock
            except (ClosedError, socket.timeout, ssl.SSLError):
                sock.close()
                raise
            except OSError as e:
                sock.close()
                err = e  # the next address
        raise err or OSError("%s: no address" % host)

    def _wait(self, sock: socket.socket, event: int, deadline: float) -> None:
        """Waits until sock is ready for event, within deadline; close()
        ends the wait at once."""
        left = deadline - time.monotonic()
        if left <= 0:
            raise socket.timeout("timed out")
        with selectors.DefaultSelector() as sel:
            sel.register(self._abort_r, selectors.EVENT_READ)
            sel.register(sock, event)
            ready = sel.select(left)
        if self._closed or any(key.fileobj is self._abort_r for key, _ in ready):
            raise ClosedError("ticketd_client: closed")
        if not ready:
            raise socket.timeout("timed out")

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
            if self._closed:
                return
            self._closed = True
            conns = list(self._active) + [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        self._abort_w.close()
        for c in conns:
            sock = c.sock
            if sock is not None:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            c.close()

    def release(self) -> None:
        """Closes what close() left for the threads to see: call it once
        they have ended."""
        self.close()
        self._abort_r.close()


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
