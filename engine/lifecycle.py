"""Stopping: whatever the engine started ends with the process that started it, at once.

The engine starts worker processes (CPU traces, the GPU), compilers (each in a process group of
its own) and a background compile thread. `shutdown()` ends them all: compilers are killed and
their unfinished build folders removed, workers are killed and the shared memory they were handing
over is freed, so nothing is left running or half-written. It runs at interpreter exit (atexit) for
any process that imported the engine, and the app calls it as soon as Streamlit starts stopping
(pages/lib/server.py), so Ctrl-C ends the server within a second whatever it was doing.
"""
from __future__ import annotations

import atexit
import sys
import threading

_DONE = threading.Event()
_LOCK = threading.Lock()


def shutdown() -> None:
    with _LOCK:
        if _DONE.is_set():
            return
        _DONE.set()
    # Only what this process has imported can have started anything: nothing is imported here (at
    # interpreter exit that would cost a process that never traced the engine's import time).
    warmup, build, workers, sandbox = (sys.modules.get(f"engine.{name}") for name in
                                       ("kernels.warmup", "kernels.build", "devices.workers", "sandbox"))
    if sandbox is not None:   # students' kernels first: nothing of theirs outlives the server
        sandbox.stop()
    if warmup is not None:
        warmup.QUEUE.stop()
    if build is not None:
        build.stop()
    if workers is not None:
        workers.stop_all()
    cache = sys.modules.get("engine.kernels.cache")
    if cache is not None:
        cache.sweep_opened()


atexit.register(shutdown)
