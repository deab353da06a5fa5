"""A fake ticketd on 127.0.0.1 for the unit tests: /v1/ids and
/v1/tickets/NAME in the binary format, /readyz, and faults to order."""

from __future__ import annotations

import json
import struct
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Dict, List, Optional, Tuple
from urllib.parse import parse_qs, urlsplit


class FakeTicketd:
    """One endpoint. IDs start at first and increase by one; sequences
    start at seq_first; any_sequence serves every name, not only "orders".
    Faults: status (answer every request for values with it), seq_status
    (every request for a sequence's values), hang (hold answers that long),
    hang_paths (hold only answers whose path starts with one of these),
    ready (/readyz status), token (required), short (answer one value less
    than asked)."""

    def __init__(self, first: int = 1 << 40, seq_first: int = 1 << 30) -> None:
        self.lock = threading.Lock()
        self.next_id = first
        self.next_seq: Dict[str, int] = {"orders": seq_first}
        self.status = 200
        self.seq_status = 200  # the same, for sequences only
        self.hang = 0.0
        self.hang_paths: Tuple[str, ...] = ()
        self.any_sequence = False
        self.ready = 200
        self.token = ""
        self.short = False
        self.retry_after = ""
        self.requests: List[Tuple[str, float]] = []  # (path and query, monotonic time)
        self.issued: Dict[int, float] = {}  # ID -> monotonic time of its request
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802 - http.server's name
                fake.handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def answer(self, h: BaseHTTPRequestHandler, status: int, body: bytes, ctype: str,
               headers: Optional[Dict[str, str]] = None) -> None:
        h.send_response(status)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.end_headers()
        try:
            h.wfile.write(body)
        except OSError:
            pass  # the client gave up (closed, or past its deadline)

    def error(self, h: BaseHTTPRequestHandler, status: int, msg: str, headers: Optional[Dict[str, str]] = None) -> None:
        self.answer(h, status, json.dumps({"error": msg}).encode(), "application/json", headers)

    def handle(self, h: BaseHTTPRequestHandler) -> None:
        u = urlsplit(h.path)
        now = time.monotonic()
        with self.lock:
            self.requests.append((h.path, now))
            status, hang, ready, token, short = self.status, self.hang, self.ready, self.token, self.short
        if u.path == "/readyz":
            self.answer(h, ready, b"ok" if ready == 200 else b'{"error":"not ready"}', "text/plain")
            return
        if hang and (not self.hang_paths or u.path.startswith(self.hang_paths)):
            time.sleep(hang)
        if token and h.headers.get("Authorization") != "Bearer " + token:
            self.error(h, 401, "no valid token", {"WWW-Authenticate": 'Bearer realm="ticketd"'})
            return
        if u.path.startswith("/v1/tickets/") and self.seq_status != 200:
            status = self.seq_status
        if status != 200:
            headers = {"Retry-After": self.retry_after} if self.retry_after else None
            self.error(h, status, "fault %d" % status, headers)
            return
        q = parse_qs(u.query)
        n = int(q.get("n", ["1"])[0])
        after = int(q.get("after", ["0"])[0])
        with self.lock:
            if u.path == "/v1/ids":
                self.next_id = max(self.next_id, after + 1)
                vals = list(range(self.next_id, self.next_id + n))
                self.next_id += n
                for v in vals:
                    self.issued[v] = now
            elif u.path.startswith("/v1/tickets/"):
                name = u.path[len("/v1/tickets/"):]
                if name not in self.next_seq and self.any_sequence:
                    self.next_seq[name] = 1
                if name not in self.next_seq:
                    self.error(h, 404, "no sequence %s" % name)
                    return
                vals = list(range(self.next_seq[name], self.next_seq[name] + n))
                self.next_seq[name] += n
            else:
                self.error(h, 404, "no such path")
                return
        if short:
            vals = vals[:-1]
        self.answer(h, 200, struct.pack(">%dQ" % len(vals), *vals), "application/octet-stream")

    def set(self, **kw: object) -> None:
        with self.lock:
            for k, v in kw.items():
                setattr(self, k, v)

    def count(self, prefix: str) -> int:
        with self.lock:
            return sum(1 for p, _ in self.requests if p.startswith(prefix))
