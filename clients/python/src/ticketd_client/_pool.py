"""The sequences' refills: a few threads shared by every sequence buffer of a
client, so that a client asked for many sequence names (one per tenant, or
names from user input) does not grow a thread per name."""

from __future__ import annotations

import heapq
import threading
import time
from collections import deque
from typing import Deque, Dict, List, Optional, Protocol, Tuple


class Task(Protocol):
    def turn(self) -> Tuple[Optional[float], bool]:
        """One round of a buffer's refill. Returns when to run again: (0.0,
        _) at once; (None, _) when kicked; (seconds, True) after a pause
        that no kick cuts short. The pool takes any other wait as a pause:
        its tasks (sequences, which never age) ask for no other."""
        ...  # pragma: no cover


# A task's state in the pool; a task the pool does not hold is idle (it runs
# when kicked).
_QUEUED, _RUNNING, _KICKED, _PAUSED = range(4)


class Pool:
    """Runs tasks on at most size threads, started as work comes and kept
    until close. Each task runs on one thread at a time: a buffer has one
    refill in flight, so its batches arrive in the order ticketd issued
    them. A task kicked while it runs runs again after; a task kicked while
    queued or paused runs once. Tasks run in the order they were kicked, so
    a slow one holds up one thread, not the others' turns."""

    def __init__(self, size: int, name: str) -> None:
        self._size = size
        self._name = name
        self._lock = threading.Lock()
        self._cv = threading.Condition(self._lock)
        self._ready: Deque[Task] = deque()
        self._paused: List[Tuple[float, int, Task]] = []  # a heap by due time
        self._seq = 0  # ties in the heap
        self._state: Dict[Task, int] = {}
        self._threads: List[threading.Thread] = []
        self._idle = 0
        self._closed = False

    def kick(self, t: Task) -> None:
        """Asks for a turn of t."""
        with self._lock:
            if self._closed:
                return
            st = self._state.get(t)
            if st is None:
                self._state[t] = _QUEUED
                self._ready.append(t)
                self._more()
            elif st == _RUNNING:
                self._state[t] = _KICKED

    def settle(self, t: Task) -> None:
        """Forgets the kicks of t that came while it runs: its turn, under
        way, answers them."""
        with self._lock:
            if self._state.get(t) == _KICKED:
                self._state[t] = _RUNNING

    def _more(self) -> None:
        """Wakes a thread for the ready tasks, or starts one (lock held)."""
        if len(self._ready) > self._idle and len(self._threads) < self._size:
            th = threading.Thread(target=self._work, daemon=True, name="%s-%d" % (self._name, len(self._threads) + 1))
            self._threads.append(th)
            th.start()
        else:
            self._cv.notify()

    def _work(self) -> None:
        with self._lock:
            while not self._closed:
                now = time.monotonic()
                while self._paused and self._paused[0][0] <= now:
                    t = heapq.heappop(self._paused)[2]
                    self._state[t] = _QUEUED
                    self._ready.append(t)
                if not self._ready:
                    self._idle += 1
                    self._cv.wait(self._paused[0][0] - now if self._paused else None)
                    self._idle -= 1
                    continue
                t = self._ready.popleft()
                self._state[t] = _RUNNING
                self._lock.release()
                try:
                    wait, paused = t.turn()
                finally:
                    self._lock.acquire()
                if wait is not None and wait > 0:
                    self._state[t] = _PAUSED
                    self._seq += 1
                    heapq.heappush(self._paused, (time.monotonic() + wait, self._seq, t))
                    self._cv.notify()  # a waiting thread minds the new due time
                elif wait == 0 or self._state[t] == _KICKED:
                    self._state[t] = _QUEUED
                    self._ready.append(t)
                else:
                    del self._state[t]

    def close(self) -> None:
        """Stops the threads once their turns end (the caller aborts those in
        flight) and waits for them."""
        with self._lock:
            self._closed = True
            self._cv.notify_all()
            threads = list(self._threads)
        for th in threads:
            if th is not threading.current_thread():
                th.join()
