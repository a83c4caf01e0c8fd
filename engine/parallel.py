"""The engine's host threads: big numpy passes over a trace, cut into pieces that run on every core.

numpy lets go of the GIL inside its loops, so pieces of one pass on a pool of threads run side by
side; this is how a trace of tens of millions of records is assembled and analysed in about the time
one core takes for a fraction of it. One pool per process, as many threads as cores.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterable, TypeVar

THREADS = os.cpu_count() or 1
_PREFIX = "engine-pool"
_POOL: ThreadPoolExecutor | None = None
_LOCK = threading.Lock()

T = TypeVar("T")
R = TypeVar("R")


def pool() -> ThreadPoolExecutor:
    global _POOL
    with _LOCK:
        if _POOL is None:
            _POOL = ThreadPoolExecutor(THREADS, thread_name_prefix=_PREFIX)
        return _POOL


def each(fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
    """fn(item) for every item, on the pool; the results in the items' order, and the first failure
    in that order is raised. Called from one of the pool's own threads it runs there, one item after
    another: a thread that waited for the pool's other threads could wait for itself."""
    items = list(items)
    if len(items) < 2 or THREADS < 2 or threading.current_thread().name.startswith(_PREFIX):
        return [fn(item) for item in items]
    return list(pool().map(fn, items))


def spans(n: int, parts: int = THREADS) -> list[tuple[int, int]]:
    """0..n cut into `parts` consecutive half-open spans of near-equal size (none empty)."""
    parts = max(1, min(parts, n))
    cuts = [n * i // parts for i in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:]))
