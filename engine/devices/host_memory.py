"""The host memory of long-running processes (the app server and its workers): glibc's allocator,
tuned so that what a trace's large arrays used goes back to the system, not into the heap for good.
Nothing here on a libc that is not glibc: there is nothing to tune.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path


def _libc():
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        return libc if hasattr(libc, "malloc_trim") and hasattr(libc, "mallopt") else None
    except OSError:   # not glibc: nothing to tune
        return None


_LIBC = _libc()
_M_MMAP_THRESHOLD = -3   # glibc's malloc.h


def release_freed_memory() -> None:
    """Hands memory the process has freed back to the system. A trace is built from many large
    temporary arrays on the server's many threads; glibc keeps what they freed in per-thread arenas
    for reuse, and a long-running server's size then grows with every distinct view although the
    caches themselves stay within their budgets."""
    if _LIBC is not None:
        _LIBC.malloc_trim(0)


def keep_large_blocks_separate() -> None:
    """Allocations of 1 MiB and more get memory of their own from the system, handed back the moment
    they are freed. glibc otherwise raises that threshold each time such a block is freed (up to
    32 MiB), after which the large arrays of every trace come from the heap and stay there. For
    long-running processes: the app server and its workers."""
    if _LIBC is not None:
        _LIBC.mallopt(_M_MMAP_THRESHOLD, 1 << 20)


def descendants(pid: int | None = None) -> list[int]:
    """Every process below pid (by default this one), as /proc says now; none where it cannot."""
    parents: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parents.setdefault(int(stat.read_text().rsplit(")", 1)[1].split()[1]), []).append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [os.getpid() if pid is None else pid]
    while todo:
        children = parents.get(todo.pop(), [])
        out += children
        todo += children
    return out


def tree_rss(pid: int | None = None) -> int:
    """Resident bytes of a process and every process below it (the server and its workers, and
    the browser kaleido starts); 0 where /proc cannot say (not Linux)."""
    pid = os.getpid() if pid is None else pid
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            total += int(Path(f"/proc/{p}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, IndexError, ValueError):
            continue
    return total
