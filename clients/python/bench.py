"""The Python client beside its language's UUID and a plain HTTP call, for
bench/clients.sh (not part of the package): prints

    clients_python_next_ns   one Client.next() from a warm buffer
    clients_python_uuid_ns   one uuid.uuid4()
    clients_python_http_ns   one GET /v1/id over a kept-alive http.client connection, parsed

each the fastest of --count rounds, the rounds alternating.

    python3 clients/python/bench.py http://127.0.0.1:8080
"""

from __future__ import annotations

import argparse
import http.client
import os
import sys
import time
import uuid
from urllib.parse import urlsplit

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "src"))

import ticketd_client  # noqa: E402

BURST = 5000  # IDs taken between refills, less than a batch


def warm(c: ticketd_client.Client) -> None:
    """Until more than two bursts are buffered in batches of more than one
    (a burst taken as a caller would while no refill is under way)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        st = c.stats()["ids"]
        if st["buffered"] > 2 * BURST and st["batch"] > BURST:
            return
        if st["buffered"] >= st["batch"]:
            c.next_n(min(BURST, st["buffered"]), timeout=10)
        else:
            time.sleep(0.0005)
    raise SystemExit("bench.py: no warm buffer within a minute: %r" % c.stats()["ids"])


def bench_next(c: ticketd_client.Client, bursts: int) -> float:
    total, calls = 0, 0
    nxt = c.next
    for _ in range(bursts):
        warm(c)
        t0 = time.perf_counter_ns()
        for _ in range(BURST):
            nxt()
        total += time.perf_counter_ns() - t0
        calls += BURST
    return total / calls


def bench_uuid(n: int) -> float:
    u4 = uuid.uuid4
    t0 = time.perf_counter_ns()
    for _ in range(n):
        u4()
    return (time.perf_counter_ns() - t0) / n


def bench_http(url: str, n: int) -> float:
    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname or "", u.port, timeout=5)
    try:
        t0 = time.perf_counter_ns()
        for _ in range(n):
            conn.request("GET", "/v1/id")
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise SystemExit("bench.py: GET /v1/id answered %d: %r" % (resp.status, body))
            int(body)
        return (time.perf_counter_ns() - t0) / n
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("--count", type=int, default=3)
    a = ap.parse_args()
    nxt = uid = plain = float("inf")
    with ticketd_client.Client([a.url]) as c:
        deadline = time.monotonic() + 2  # the batch grows to its maximum
        while time.monotonic() < deadline:
            c.next_n(1000, timeout=10)
        for _ in range(a.count):
            nxt = min(nxt, bench_next(c, 10))
            uid = min(uid, bench_uuid(50_000))
            plain = min(plain, bench_http(a.url, 2000))
    print("clients_python_next_ns %.1f" % nxt)
    print("clients_python_uuid_ns %.1f" % uid)
    print("clients_python_http_ns %.0f" % plain)


if __name__ == "__main__":
    main()
