"""Hands large arrays from the GPU worker to the app through shared memory, not the pipe.

The worker fills a SharedArray (its .array is a numpy view of a named shared-memory block) and
sends it; only the name, shape and dtype are pickled. The receiver's copy attaches to the block,
and .take() copies the data out and frees the block. Pickling 100+ MB through the pipe would cost
more than the GPU's whole trace.
"""
from __future__ import annotations

import itertools
import mmap
import os
from multiprocessing import resource_tracker, shared_memory
from pathlib import Path

import numpy as np

_SHM = Path("/dev/shm")
_NAMES = itertools.count()


def _prefix(pid: int) -> str:
    # Named after the process that made the block, so that what a killed worker left behind can be
    # found and freed (see sweep).
    return f"mmx{pid}_"


def fits(nbytes: int) -> bool:
    """Is there room for nbytes of shared memory? A container's /dev/shm is often 64 MB: a block
    bigger than what is free there is created all the same, and the first write past the end kills
    the process (SIGBUS). Where it does not fit, the caller sends the data through the pipe."""
    try:
        st = os.statvfs(_SHM)
    except OSError:
        return True   # no /dev/shm to ask (not Linux): shared memory lives elsewhere
    return nbytes < st.f_bavail * st.f_frsize * 0.8


def sweep(pid: int) -> int:
    """Frees the blocks a worker process made and nobody took (it was killed mid-request, or the
    app failed before taking them): otherwise they stay until the machine restarts."""
    freed = 0
    for path in _SHM.glob(f"{_prefix(pid)}*") if _SHM.is_dir() else ():
        try:
            path.unlink()
            freed += 1
        except OSError:
            pass
    return freed


def _untrack(shm: shared_memory.SharedMemory) -> None:
    # Python < 3.13 registers every block with the resource tracker, which would unlink it when
    # the process that made (or merely opened) it exits; the receiver frees it explicitly instead.
    try:
        resource_tracker.unregister(shm._name, "shared_memory")  # noqa: SLF001
    except Exception:
        pass


class SharedArray:
    def __init__(self, shape, dtype):
        dtype = np.dtype(dtype)
        self.shape, self.dtype = tuple(shape), dtype
        self.shm = shared_memory.SharedMemory(name=f"{_prefix(os.getpid())}{next(_NAMES)}", create=True,
                                              size=max(1, int(np.prod(shape)) * dtype.itemsize))
        _untrack(self.shm)
        self.array = np.ndarray(self.shape, dtype, buffer=self.shm.buf)

    def __getstate__(self):
        return {"name": self.shm.name, "shape": self.shape, "dtype": self.dtype}

    def __setstate__(self, state):
        # The receiver does not attach here: take() maps the block itself (see there).
        self.shape, self.dtype, self.name = state["shape"], state["dtype"], state["name"]
        self.shm = self.array = None

    def release(self) -> None:
        """The sender's side: drop its mapping once sent (the block lives on until taken)."""
        self.array = None
        self.shm.close()

    def discard(self) -> None:
        """Either side: the block is freed unread (a request that failed after it was made)."""
        self.array = None
        try:
            block = self.shm if self.shm is not None else shared_memory.SharedMemory(name=self.name)
            block.close()
            block.unlink()
        except FileNotFoundError:
            pass   # gone already

    def take(self) -> np.ndarray:
        """The receiver's side: the data, and the block's name is freed. On Linux the array is the
        block itself, mapped here and unlinked at once (the memory lives as long as the array, and
        nobody else can open it any more): a trace's records arrive without being copied. Elsewhere,
        a private copy."""
        count = int(np.prod(self.shape))
        path = _SHM / self.name.lstrip("/")
        if _SHM.is_dir():
            with open(path, "r+b") as f:
                mapped = mmap.mmap(f.fileno(), 0)
            path.unlink()
            return np.frombuffer(mapped, self.dtype, count=count).reshape(self.shape)
        block = shared_memory.SharedMemory(name=self.name)
        try:
            return np.ndarray(self.shape, self.dtype, buffer=block.buf).copy()
        finally:
            block.close()
            block.unlink()
