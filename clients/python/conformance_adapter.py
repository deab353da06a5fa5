"""The Python client's conformance adapter: it speaks the protocol of
clients/conformance/PROTOCOL.md on its standard input and output, creating
ticketd_client clients and calling them as the driver
(go test ./clients/conformance) says. Not part of the package."""

from __future__ import annotations

import json
import sys
import threading
import time
from typing import Any, Dict, List, Optional

import ticketd_client as tc


def error_of(err: BaseException) -> Dict[str, Any]:
    """Maps the client's exceptions to the protocol's kinds, by class."""
    kinds = [(tc.ClosedError, "closed"), (tc.BadNameError, "bad_name"), (tc.BadConfigError, "bad_config"),
             (tc.RejectedError, "rejected"), (tc.UnavailableError, "unavailable"), (tc.DeadlineError, "timeout")]
    kind = "bad_answer"
    for cls, k in kinds:
        if isinstance(err, cls):
            kind = k
            break
    return {"kind": kind, "message": str(err), "status": err.status if isinstance(err, tc.RejectedError) else 0}


class Job:
    def __init__(self, client: tc.Client, req: Dict[str, Any]) -> None:
        self.calls = 0
        self.lock = threading.Lock()
        self.answer: Optional[Dict[str, Any]] = None
        self.client = client
        self.req = req
        self.thread = threading.Thread(target=self.run)

    def run(self) -> None:
        r = self.req
        n, threads = int(r.get("count", 0)), int(r.get("threads", 1))
        timeout = (r.get("timeout_ms") or 10000) / 1000.0
        every, pause = int(r.get("pause_every") or 0), (r.get("pause_ms") or 0) / 1000.0
        timed, op, name = bool(r.get("timed")), r["op"], r.get("name", "")
        results: List[Dict[str, Any]] = [{"values": [], "errors": []} for _ in range(threads)]

        def work(res: Dict[str, Any]) -> None:
            values: List[str] = res["values"]
            times: List[List[int]] = []
            for k in range(1, n + 1):
                start = time.time_ns() // 1000
                try:
                    v = self.client.next(timeout) if op == "next" else self.client.ticket(name, timeout)
                except Exception as e:  # noqa: BLE001 - every error is reported
                    res["errors"].append(error_of(e))
                else:
                    values.append(str(v))
                    if timed:
                        times.append([start, time.time_ns() // 1000])
                with self.lock:
                    self.calls += 1
                if every and k % every == 0:
                    time.sleep(pause)
            if timed:
                res["times"] = times

        ts = [threading.Thread(target=work, args=(res,)) for res in results]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.answer = {"ok": True, "threads": results}


def new_client(cfg: Dict[str, Any]) -> tc.Client:
    ms = lambda k: (cfg.get(k) or 0) / 1000.0  # noqa: E731
    return tc.Client(cfg.get("endpoints") or [], token=cfg.get("token") or "", ca_file=cfg.get("ca_file") or None,
                     call_timeout=ms("call_timeout_ms"), max_age=ms("max_age_ms"),
                     min_batch=cfg.get("min_batch") or 0, max_batch=cfg.get("max_batch") or 0,
                     max_ticket_batch=cfg.get("max_ticket_batch") or 0, batch_period=ms("batch_period_ms"),
                     probe_every=ms("probe_every_ms"), strictly_increasing=bool(cfg.get("strictly_increasing")))


def stream_of(s: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(s)
    out["refill_latency_total_ms"] = out.pop("refill_latency_total") * 1000.0
    out["refill_latency_max_ms"] = out.pop("refill_latency_max") * 1000.0
    return out


def stats_of(c: tc.Client) -> Dict[str, Any]:
    """The client's stats in the protocol's terms: Python's names are the
    contract's, the latencies in seconds."""
    st = c.stats()
    return {"ids": stream_of(st["ids"]), "sequences": {k: stream_of(v) for k, v in st["sequences"].items()},
            "endpoints": st["endpoints"]}


def printed(c: tc.Client) -> List[str]:
    """Every way a Python program prints a client and its configuration."""
    return [repr(c), str(c), "%s" % (c,), "%r" % (c,), "{}".format(c), repr(c.config), str(c.config)]


def fail(kind: str, message: str) -> Dict[str, Any]:
    return {"ok": False, "error": {"kind": kind, "message": message, "status": 0}}


def main() -> None:
    clients: Dict[str, tc.Client] = {}
    jobs: Dict[str, Job] = {}

    def do(r: Dict[str, Any]) -> Dict[str, Any]:
        op = r.get("op")
        if op == "hello":
            return {"ok": True, "language": "python", "resources_exact": True,
                    "client": "ticketd-client %s (Python %s)" % (tc.__version__, sys.version.split()[0])}
        if op == "new":
            name = r.get("client", "")
            if not name or name in clients:
                return fail("protocol", "client %r: a new name" % name)
            try:
                clients[name] = new_client(r.get("config") or {})
            except Exception as e:  # noqa: BLE001
                return {"ok": False, "error": error_of(e)}
            return {"ok": True}
        if op in ("next", "ticket"):
            c = clients.get(r.get("client", ""))
            if c is None:
                return fail("protocol", "no client %r" % r.get("client"))
            job = Job(c, r)
            if not r.get("job"):
                job.run()
                return job.answer or fail("protocol", "no answer")
            if r["job"] in jobs:
                return fail("protocol", "job %r twice" % r["job"])
            jobs[r["job"]] = job
            job.thread.start()
            return {"ok": True}
        if op in ("progress", "wait"):
            job = jobs.get(r.get("job", ""))
            if job is None:
                return fail("protocol", "no job %r" % r.get("job"))
            if op == "progress":
                with job.lock:
                    return {"ok": True, "calls": job.calls}
            job.thread.join()
            return job.answer or fail("protocol", "no answer")
        if op == "close":
            c = clients.get(r.get("client", ""))
            if c is None:
                return fail("protocol", "no client %r" % r.get("client"))
            c.close()
            return {"ok": True, "count": threading.active_count()}
        if op == "resources":
            return {"ok": True, "count": threading.active_count()}
        if op in ("stats", "print"):
            c = clients.get(r.get("client", ""))
            if c is None:
                return fail("protocol", "no client %r" % r.get("client"))
            if op == "stats":
                return {"ok": True, "stats": stats_of(c)}
            return {"ok": True, "printed": printed(c)}
        return fail("protocol", "unknown op %r" % op)

    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            ans = do(json.loads(line))
        except Exception as e:  # noqa: BLE001 - a bug of the adapter, not of the client
            ans = fail("protocol", "%s: %s" % (type(e).__name__, e))
        sys.stdout.write(json.dumps(ans, separators=(",", ":")) + "\n")
        sys.stdout.flush()
    for job in jobs.values():
        job.thread.join()
    for c in clients.values():
        c.close()


if __name__ == "__main__":
    main()
