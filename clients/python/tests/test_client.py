"""Unit tests of ticketd_client against fake ticketd on 127.0.0.1:
python3 -m unittest discover -s clients/python/tests (with src on the path)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Callable, List

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import ticketd_client as tc  # noqa: E402
from fake import FakeTicketd  # noqa: E402

PY_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def wait_until(what: str, cond: Callable[[], bool], timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError("%s: not within %s s" % (what, timeout))
        time.sleep(0.005)


def client_threads() -> List[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("ticketd-")]


class Base(unittest.TestCase):
    def fake(self, **kw: object) -> FakeTicketd:
        f = FakeTicketd(**kw)  # type: ignore[arg-type]
        self.addCleanup(f.close)
        return f

    def client(self, endpoints: List[str], **kw: object) -> tc.Client:
        c = tc.Client(endpoints, **kw)  # type: ignore[arg-type]
        self.addCleanup(c.close)
        return c


class TestConfig(Base):
    def test_bounds(self) -> None:
        bad = [([], {}), (["ftp://x"], {}), (["http://"], {}), (["http://a?x=1"], {}), (["http://a", "http://a/"], {}),
               (["http://a"], {"max_age": 0.001}), (["http://a"], {"call_timeout": 2.0}),
               (["http://a"], {"min_batch": 10, "max_batch": 5}), (["http://a"], {"max_batch": 2_000_000}),
               (["http://a"], {"batch_period": 0.9}), (["http://a"], {"probe_every": 0.001}),
               (["http://a"], {"token": "has space"}), ("http://a", {})]
        for eps, kw in bad:
            with self.subTest(eps=eps, kw=kw):
                with self.assertRaises(tc.BadConfigError):
                    tc.Client(eps, **kw)  # type: ignore[arg-type]

    def test_token_never_printed(self) -> None:
        f = self.fake()
        c = self.client([f.url], token="s3cret-token")
        self.assertNotIn("s3cret-token", repr(c))
        self.assertNotIn("s3cret-token", str(c.config))
        self.assertIn("[redacted]", repr(c.config))


class TestBuffer(Base):
    def test_unique_and_increasing_across_threads(self) -> None:
        f = self.fake()
        c = self.client([f.url])
        got: List[List[int]] = [[] for _ in range(4)]

        def work(out: List[int]) -> None:
            for _ in range(3000):
                out.append(c.next(timeout=10))

        ts = [threading.Thread(target=work, args=(g,)) for g in got]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        every = [v for g in got for v in g]
        self.assertEqual(len(every), len(set(every)), "an ID handed out twice")
        for g in got:
            self.assertEqual(g, sorted(g), "a thread's IDs do not increase")
        ids = c.next_n(500, timeout=10)
        self.assertEqual(ids, sorted(ids))
        self.assertGreater(ids[0], max(every))
        st = c.stats()["ids"]
        self.assertEqual(st["served"], 12500)
        self.assertGreater(st["refills"], 1)
        # Batches grew (Leaf's step): fewer requests than 12500 / 16.
        self.assertLess(f.count("/v1/ids"), 12500 // 16)

    def test_max_age(self) -> None:
        f = self.fake()
        max_age = 0.1
        c = self.client([f.url], max_age=max_age, min_batch=1000, max_batch=1000)
        old = 0
        for _ in range(40):
            v = c.next(timeout=10)
            age = time.monotonic() - f.issued[v]
            self.assertLess(age, max_age, "ID %d handed out %.3f s after its request" % (v, age))
            time.sleep(0.01)
            old = max(old, int(age * 1000))
        self.assertGreater(c.stats()["ids"]["dropped_by_age"], 0, "no ID aged out: the test shows nothing")

    def test_max_age_counts_from_the_request(self) -> None:
        """Age runs from when the refill was sent, not from when its answer
        arrived: with a slow answer, the two differ by the answer's delay."""
        f = self.fake()
        max_age, delay = 0.5, 0.3
        f.set(hang=delay)
        c = self.client([f.url], max_age=max_age, call_timeout=max_age, min_batch=1000, max_batch=1000)
        first = c.next(timeout=10)
        # Past max_age since the first batch was asked for (the fake saw the
        # request after the client sent it), not since it arrived.
        time.sleep(max(0.0, f.issued[first] + max_age + 0.05 - time.monotonic()))
        v = c.next(timeout=10)
        age = time.monotonic() - f.issued[v]
        self.assertLess(age, max_age, "ID %d handed out %.3f s after its request (its answer took %.1f s)" % (v, age, delay))
        self.assertGreater(c.stats()["ids"]["dropped_by_age"], 0)

    def test_sequences(self) -> None:
        f = self.fake()
        c = self.client([f.url])
        vals = [c.ticket("orders", timeout=10) for _ in range(50)] + c.tickets("orders", 100, timeout=10)
        self.assertEqual(len(set(vals)), 150)
        with self.assertRaises(tc.BadNameError):
            c.ticket("Orders")
        with self.assertRaises(tc.RejectedError) as cm:
            c.ticket("nothing_here", timeout=10)
        self.assertEqual(cm.exception.status, 404)
        self.assertEqual(f.count("/v1/tickets/Orders"), 0)

    def test_many_sequences_share_a_few_threads(self) -> None:
        f = self.fake()
        f.set(any_sequence=True)
        c = self.client([f.url])
        names = ["s%d" % i for i in range(200)]
        got: dict = {}

        def work(k: int) -> None:
            for name in names[k::4]:
                got[name] = c.tickets(name, 3, timeout=10)

        ts = [threading.Thread(target=work, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(sorted(got), sorted(names))
        for name, vals in got.items():
            self.assertEqual(len(set(vals)), 3, name)
        threads = client_threads()
        # The IDs' refill thread, the prober, and the sequences' shared refill threads.
        self.assertLessEqual(len(threads), 2 + tc._client.SEQUENCE_REFILLS, threads)

    def test_a_slow_sequence_does_not_hold_up_the_others(self) -> None:
        f = self.fake()
        f.set(any_sequence=True, hang=3.0, hang_paths=("/v1/tickets/slow",))
        c = self.client([f.url], max_age=5.0, call_timeout=4.0)
        slow = threading.Thread(target=lambda: self.assertRaises(tc.ClosedError, c.ticket, "slow", 10))
        slow.start()
        wait_until("the slow request", lambda: f.count("/v1/tickets/slow") > 0)
        start = time.monotonic()
        c.ticket("orders", timeout=2)
        took = time.monotonic() - start
        c.close()
        slow.join()
        self.assertLess(took, 1.0, "a sequence waited behind a slow one")


class TestFailover(Base):
    def test_skips_a_failing_endpoint_and_rejoins(self) -> None:
        a, b = self.fake(first=1 << 50), self.fake(first=1 << 40)
        a.set(status=503, ready=503)
        c = self.client([a.url, b.url], probe_every=0.02)
        v = c.next(timeout=10)
        self.assertLess(v, 1 << 50, "an ID from the failing endpoint")
        eps = c.stats()["endpoints"]
        self.assertFalse(eps[0]["up"])
        self.assertTrue(eps[1]["current"])
        a.set(status=200, ready=200)
        wait_until("the first endpoint rejoins", lambda: c.stats()["endpoints"][0]["up"])
        # It stays on the second while that one works.
        c.next_n(2000, timeout=10)
        self.assertTrue(c.stats()["endpoints"][1]["current"])

    def test_all_down(self) -> None:
        a, b = self.fake(), self.fake()
        c = self.client([a.url, b.url], max_age=0.2, call_timeout=0.05, min_batch=10, max_batch=10)
        c.next(timeout=10)
        a.set(status=503)
        b.set(status=503)
        time.sleep(0.25)
        with self.assertRaises(tc.UnavailableError) as cm:
            c.next_n(50, timeout=10)
        self.assertIn(a.url, str(cm.exception))
        self.assertIn(b.url, str(cm.exception))
        b.set(status=200)
        self.assertGreater(c.next(timeout=10), 0)

    def test_slow_endpoint_skipped_within_call_timeout(self) -> None:
        a, b = self.fake(), self.fake()
        a.set(hang=5.0)
        c = self.client([a.url, b.url], call_timeout=0.2)
        start = time.monotonic()
        c.next(timeout=10)
        self.assertLess(time.monotonic() - start, 3.0)
        self.assertIn("no answer", c.stats()["endpoints"][0]["last_error"])

    def test_bad_answer_skips(self) -> None:
        a, b = self.fake(), self.fake()
        a.set(short=True)
        c = self.client([a.url, b.url])
        c.next(timeout=10)
        self.assertIn("bytes for", c.stats()["endpoints"][0]["last_error"])

    def test_unavailable_after_the_refill_under_way(self) -> None:
        # Every endpoint holds its answers: a call that comes while the first
        # refill is under way gets that refill's outcome, once it has asked
        # each endpoint with call_timeout and then each with max_age, not
        # after another refill as well.
        a, b = self.fake(), self.fake()
        a.set(hang=5.0)
        b.set(hang=5.0)
        c = self.client([a.url, b.url], call_timeout=0.05, max_age=0.15, probe_every=5.0)
        wait_until("the first refill asks", lambda: a.count("/v1/ids") >= 1)
        with self.assertRaises(tc.UnavailableError):
            c.next(timeout=10)
        st = c.stats()
        self.assertEqual(st["ids"]["refill_failures"], 1, "refills failed when next raised")
        for e in st["endpoints"]:
            self.assertEqual((e["requests"], e["failures"]), (2, 2), e)

    def test_rejected_is_no_failure_of_the_endpoint(self) -> None:
        a, b = self.fake(), self.fake()
        c = self.client([a.url, b.url])
        c.next(timeout=10)
        with self.assertRaises(tc.RejectedError) as cm:
            c.ticket("nosuch", timeout=10)
        self.assertEqual(cm.exception.status, 404)
        st = c.stats()
        ea, eb = st["endpoints"]
        self.assertEqual((ea["up"], ea["current"], ea["failures"], ea["rejected"], ea["last_error"]),
                         (True, True, 0, 1, ""), ea)
        self.assertEqual(eb["requests"], 0, "a rejected request was asked of the other endpoint")
        self.assertEqual(st["sequences"]["nosuch"]["refill_failures"], 1)
        self.assertIn("404", st["sequences"]["nosuch"]["last_error"])

    def test_token_refused(self) -> None:
        f = self.fake()
        f.set(token="right-token")
        with self.assertRaises(tc.RejectedError) as cm:
            self.client([f.url]).next(timeout=10)
        self.assertEqual(cm.exception.status, 401)
        self.assertGreater(self.client([f.url], token="right-token").next(timeout=10), 0)

    def test_over_quota_is_paced_not_refused(self) -> None:
        f = self.fake()
        f.set(status=429, retry_after="1")
        c = self.client([f.url])
        with self.assertRaises(tc.DeadlineError):
            c.next(timeout=0.3)  # waits for the pause, within its own deadline
        self.assertGreaterEqual(c.stats()["ids"]["throttled"], 1)
        self.assertTrue(c.stats()["endpoints"][0]["up"], "a quota is no failure of the endpoint")
        f.set(status=200)
        self.assertGreater(c.next(timeout=10), 0)

    def test_sequence_over_quota_is_paced(self) -> None:
        f = self.fake()
        f.set(seq_status=429, retry_after="1")
        c = self.client([f.url])
        with self.assertRaises(tc.DeadlineError):
            c.ticket("orders", timeout=0.3)
        n = f.count("/v1/tickets/orders")
        time.sleep(0.3)
        self.assertEqual(f.count("/v1/tickets/orders"), n, "asked again before Retry-After")
        f.set(seq_status=200)
        self.assertGreater(c.ticket("orders", timeout=10), 0)
        self.assertGreaterEqual(c.stats()["sequences"]["orders"]["throttled"], 1)

    def test_sequence_503_keeps_the_endpoint_for_ids(self) -> None:
        f = self.fake()
        c = self.client([f.url], call_timeout=0.2, max_age=0.5)
        c.next(timeout=10)
        f.set(seq_status=503)
        with self.assertRaises(tc.UnavailableError):
            c.ticket("orders", timeout=10)
        self.assertTrue(c.stats()["endpoints"][0]["up"], "a 503 for a sequence took the endpoint out")

    def test_caller_deadline(self) -> None:
        f = self.fake()
        f.set(hang=3.0)
        c = self.client([f.url], call_timeout=0.5)
        start = time.monotonic()
        with self.assertRaises(tc.DeadlineError):
            c.next(timeout=0.1)
        self.assertLess(time.monotonic() - start, 1.0)


class TestStrict(Base):
    def run_switch(self, strict: bool) -> List[int]:
        a, b = self.fake(first=1 << 50), self.fake(first=1 << 40)  # b is behind a
        c = self.client([a.url, b.url], strictly_increasing=strict, min_batch=10, max_batch=10)
        got = [c.next(timeout=10) for _ in range(25)]
        a.set(status=503)
        got += [c.next(timeout=10) for _ in range(100)]
        self.assertEqual(len(set(got)), len(got))
        self.assertEqual(b.count("/v1/ids?after=") > 0, strict)
        return got

    def test_strictly_increasing_across_a_switch(self) -> None:
        got = self.run_switch(True)
        self.assertEqual(got, sorted(got))
        # The control: without the mode, IDs go down at the switch.
        got = self.run_switch(False)
        self.assertNotEqual(got, sorted(got))


class TestClose(Base):
    def test_close_stops_everything(self) -> None:
        f = self.fake()
        c = tc.Client([f.url])
        c.next(timeout=10)
        c.ticket("orders", timeout=10)
        f.set(hang=2.0)
        waiter: List[BaseException] = []

        def wait() -> None:
            try:
                c.next_n(100_000, timeout=30)
            except BaseException as e:  # noqa: BLE001
                waiter.append(e)

        t = threading.Thread(target=wait)
        t.start()
        time.sleep(0.1)
        start = time.monotonic()
        c.close()
        self.assertLess(time.monotonic() - start, 1.5, "close waited for a request in flight")
        t.join(5)
        self.assertTrue(waiter and isinstance(waiter[0], tc.ClosedError), waiter)
        self.assertEqual(client_threads(), [], "threads of the client alive after close")
        with self.assertRaises(tc.ClosedError):
            c.next()
        with self.assertRaises(tc.ClosedError):
            c.ticket("orders")
        c.close()

    def test_close_aborts_a_connect(self) -> None:
        """An endpoint whose listen queue is full drops the SYN: the refill's
        connect would wait for its call timeout (10 s); close does not."""
        if not os.path.exists("/proc/net/tcp"):
            self.skipTest("needs Linux: a full listen queue drops SYNs, /proc/net/tcp shows them")
        lst = socket.socket()
        self.addCleanup(lst.close)
        lst.bind(("127.0.0.1", 0))
        lst.listen(0)
        port = lst.getsockname()[1]
        filler = socket.create_connection(("127.0.0.1", port), timeout=5)  # the queue's only place
        self.addCleanup(filler.close)
        c = tc.Client(["http://127.0.0.1:%d" % port], max_age=30.0, call_timeout=10.0)
        self.addCleanup(c.close)
        wait_until("the client's SYN", lambda: syn_sent(port))
        self.close_within(c, 2.0, "a connect")

    def test_close_aborts_a_tls_handshake(self) -> None:
        """An endpoint that accepts TCP and never answers the TLS ClientHello."""
        lst = socket.socket()
        self.addCleanup(lst.close)
        lst.bind(("127.0.0.1", 0))
        lst.listen(8)
        lst.settimeout(10)
        c = tc.Client(["https://127.0.0.1:%d" % lst.getsockname()[1]], max_age=30.0, call_timeout=10.0)
        self.addCleanup(c.close)
        conn, _ = lst.accept()
        self.addCleanup(conn.close)
        conn.settimeout(10)
        self.assertTrue(conn.recv(1), "no ClientHello")  # the client now waits for the server's answer
        self.close_within(c, 2.0, "a TLS handshake")

    def close_within(self, c: tc.Client, limit: float, what: str) -> None:
        """Closes c, which must return within limit seconds (its call
        timeout is 10 s) and leave no thread of its own."""
        start = time.monotonic()
        c.close()
        took = time.monotonic() - start
        self.assertLess(took, limit, "close waited %.1f s for %s" % (took, what))
        self.assertEqual(client_threads(), [], "threads of the client alive after close")

    def test_context_manager(self) -> None:
        f = self.fake()
        with tc.Client([f.url]) as c:
            c.next(timeout=10)
        with self.assertRaises(tc.ClosedError):
            c.next()


def syn_sent(port: int) -> bool:
    """Whether a connection to 127.0.0.1:port waits in SYN_SENT."""
    want = "0100007F:%04X" % port
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[2] == want and fields[3] == "02":
                return True
    return False


class TestExitWithoutClose(Base):
    def test_a_program_that_forgets_close_exits(self) -> None:
        f = self.fake()
        src = os.path.join(PY_ROOT, "src")
        prog = "import sys; sys.path.insert(0, %r); import ticketd_client as tc; c = tc.Client([%r]); c.next(timeout=10); print('ok')" % (src, f.url)
        out = subprocess.run([sys.executable, "-c", prog], capture_output=True, text=True, timeout=20)
        self.assertEqual((out.returncode, out.stdout.strip()), (0, "ok"), out.stderr)


class TestPackaging(unittest.TestCase):
    def test_pip_installs_offline(self) -> None:
        """pip install --no-index: the build backend is in the tree."""
        with tempfile.TemporaryDirectory() as d:
            out = subprocess.run([sys.executable, "-m", "pip", "install", "--no-index", "--quiet",
                                  "--disable-pip-version-check", "--target", d, PY_ROOT],
                                 capture_output=True, text=True, env=dict(os.environ, PIP_ROOT_USER_ACTION="ignore"))
            self.assertEqual(out.returncode, 0, out.stderr)
            files = sorted(os.listdir(os.path.join(d, "ticketd_client")))
            self.assertIn("py.typed", files)
            check = subprocess.run([sys.executable, "-c", "import ticketd_client; print(ticketd_client.__version__)"],
                                   capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=d), cwd=d)
            self.assertEqual(check.stdout.strip(), tc.__version__, check.stderr)


if __name__ == "__main__":
    unittest.main()
