"""Stopping: whatever the engine started ends with the process that started it, at once.

The engine starts worker processes (CPU traces, the GPU), compilers (each in a process group of
its own) and a background compile thread. `shutdown()` ends them all: compilers are killed and
their unfinished build folders removed, workers are killed and the shared memory they were handing
over is freed, so nothing is left running or half-written. It runs at interpreter exit (atexit) for
any process that imported the engine, and the app calls it as soon as Streamlit starts stopping
(pages/lib/lifecycle.py), so Ctrl-C ends the server within a second whatever it was doing.
"""
from __future__ import annotations

import atexit
import threading

_DONE = threading.Event()
_LOCK = threading.Lock()


def shutdown() -> None:
    with _LOCK:
        if _DONE.is_set():
            return
        _DONE.set()
    # Imported here: this module is imported early (by engine/__init__) and must not pull the
    # whole engine in with it.
    from engine.devices import workers  # noqa: PLC0415
    from engine.kernels import build, warmup  # noqa: PLC0415
    warmup.QUEUE.stop()
    build.stop()
    workers.stop_all()


def stopping() -> bool:
    return _DONE.is_set()


atexit.register(shutdown)
