"""The engine's host threads: big numpy passes over a trace, cut into pieces that run on every core.

numpy lets go of the GIL inside its loops, so pieces of one pass on a pool of threads run side by
side; this is how a trace of tens of millions of records is assembled and analysed in about the time
one core takes for a fraction of it. One pool per process, as many threads as cores.
"""
from __future__ import annotations

import os
import queue
import threading
from concurrent.futures import Future
from typing import Callable, Iterable, TypeVar

THREADS = os.cpu_count() or 1
_PREFIX = "engine-pool"

T = TypeVar("T")
R = TypeVar("R")


class _Pool:
    """THREADS daemon threads taking (fn, item, future) from one queue. Not a ThreadPoolExecutor:
    Python joins those threads at exit, after every piece already queued, so a process asked to stop
    in the middle of a big pass would wait for all of it; a daemon thread ends with the process."""

    def __init__(self, threads: int):
        self._todo: queue.SimpleQueue = queue.SimpleQueue()
        for i in range(threads):
            threading.Thread(target=self._work, name=f"{_PREFIX}-{i}", daemon=True).start()

    def _work(self) -> None:
        while True:
            fn, item, future = self._todo.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(fn(item))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who raises it
                future.set_exception(exc)

    def map(self, fn: Callable[[T], R], items: list[T]) -> list[R]:
        futures = []
        for item in items:
            future: Future = Future()
            self._todo.put((fn, item, future))
            futures.append(future)
        return [f.result() for f in futures]


_POOL: _Pool | None = None
_LOCK = threading.Lock()


def pool() -> _Pool:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = _Pool(THREADS)
        return _POOL


def each(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """fn(item) for every item, on the pool; the results in the items' order, and the first failure
    in that order is raised. Called from one of the pool's own threads it runs there, one item after
    another: a thread that waited for the pool's other threads could wait for itself."""
    items = list(items)
    if len(items) < 2 or THREADS < 2 or threading.current_thread().name.startswith(_PREFIX):
        return [fn(item) for item in items]
    return pool().map(fn, items)


def spans(n: int, parts: int = THREADS) -> list[tuple[int, int]]:
    """0..n cut into `parts` consecutive half-open spans of near-equal size (none empty)."""
    parts = max(1, min(parts, n))
    cuts = [n * i // parts for i in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:]))
