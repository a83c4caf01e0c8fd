"""A results cache for a room of sessions: bounded in bytes, each result computed once.

Streamlit's own caches fall short for a shared server in three ways: they are bounded by entry
count (a dozen whole-kernel traces can be 2 GB), any client can clear them for everyone (the
"clear_cache" message every session may send), and the app cannot see what they hold. This one is
plain engine state: entries are weighed in bytes (numpy arrays, DataFrames and the containers
around them) and the least recently used go first; sessions asking for the same key while it is
being computed wait for that one computation instead of starting their own.
"""
from __future__ import annotations

import dataclasses
import os
import sys
import threading
from collections import OrderedDict
from concurrent.futures import Future
from typing import Callable, Hashable

import numpy as np

from engine.devices import host_memory
from engine.kernels.cache import MAX_BUDGET_MB


def nbytes(obj, _seen: set | None = None) -> int:
    """Memory held by a result: arrays and frames by their buffers, containers by what they hold.
    Shared objects are counted once. An estimate of what dropping the entry frees, not an audit."""
    seen = set() if _seen is None else _seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes) if obj.base is None or id(obj.base) not in seen else 0
    pd = sys.modules.get("pandas")   # not imported, then no object here is a frame (workers need no pandas)
    if pd is not None and isinstance(obj, (pd.DataFrame, pd.Series)):
        usage = obj.memory_usage(deep=True)
        return int(usage.sum() if isinstance(obj, pd.DataFrame) else usage)
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(nbytes(k, seen) + nbytes(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return sys.getsizeof(obj) + sum(nbytes(v, seen) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return sys.getsizeof(obj) + sum(nbytes(getattr(obj, f.name), seen) for f in dataclasses.fields(obj))
    if hasattr(obj, "__dict__") and not isinstance(obj, type):
        return sys.getsizeof(obj) + nbytes(vars(obj), seen)
    return sys.getsizeof(obj)


class Memo:
    """get(key, compute) -> compute()'s result, kept while it fits in max_bytes (least recently
    used dropped first; `weigh` says what a result holds, by default nbytes). A result larger than the whole budget is returned but not kept. A failed
    computation is not kept either: its waiters get the same exception, the next caller tries again."""

    def __init__(self, name: str, max_bytes: int, weigh: Callable[[object], int] = nbytes):
        self.name, self.max_bytes, self.weigh = name, max_bytes, weigh
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._running: dict[Hashable, Future] = {}
        self._lock = threading.Lock()
        self.bytes = 0
        self.hits = self.misses = self.shared = 0

    def get(self, key: Hashable, compute: Callable[[], object], keep: Callable[[object], bool] = lambda v: True):
        """`keep(result)` False: the result goes to this call and its waiters only (a tool that
        failed this time is asked again next time)."""
        with self._lock:
            if key in self._entries:
                self._entries.move_to_end(key)
                self.hits += 1
                return self._entries[key][0]
            running = self._running.get(key)
            if running is None:
                running = self._running[key] = Future()
                mine = True
                self.misses += 1
            else:
                mine = False
                self.shared += 1
        if not mine:
            return running.result()
        try:
            value = compute()
            size = self.weigh(value)
            kept = size <= self.max_bytes and keep(value)
        except BaseException as exc:
            # Whatever failed, the waiters hear of it and the key is free again: a future nobody
            # resolves would hang every session asking for this view from then on.
            with self._lock:
                del self._running[key]
            running.set_exception(exc)
            raise
        with self._lock:
            del self._running[key]
            if kept:
                self._entries[key] = (value, size)
                self.bytes += size
                while self.bytes > self.max_bytes:
                    _, (_, dropped) = self._entries.popitem(last=False)
                    self.bytes -= dropped
        running.set_result(value)
        host_memory.release_freed_memory()
        return value

    def computing(self, key: Hashable) -> bool:
        """Whether another caller is computing key now (a get of it would wait for that one)."""
        with self._lock:
            return key in self._running and key not in self._entries

    def clear(self) -> None:
        """For tests and the server's own code: no client message reaches this."""
        with self._lock:
            self._entries.clear()
            self.bytes = 0

    def __len__(self) -> int:
        return len(self._entries)


def budget(name: str, default_mb: int) -> int:
    """Bytes from an environment variable in MB (for a bigger or smaller machine; 0 turns the cache
    off), else the default. Read as every page starts, so a value it cannot take is a one-line
    warning in the server's log and the default, not an exception on every page (inf and 1e400
    had crashed them all at import)."""
    raw = os.environ.get(name)
    try:
        mb = float(raw) if raw else default_mb
    except ValueError:
        mb = float("nan")
    if not 0 <= mb <= MAX_BUDGET_MB:   # NaN too
        print(f"warning: {name}={raw!r} is not a number of megabytes from 0 to {MAX_BUDGET_MB:,}; "
              f"using {default_mb}", file=sys.stderr)
        mb = default_mb
    return int(mb * 2**20)
