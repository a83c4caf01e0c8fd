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
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from contextlib import contextmanager
from pathlib import Path

_DONE = threading.Event()
_LOCK = threading.Lock()
# The folders that hold the profile of a Chromium an export drives (animations, chart pictures), while
# it runs, each with the folder of its singleton socket once known (see browser_started). Closed in order,
# a browser removes both; stopped, the server ended before it did, and each stop left them in the
# temporary folder (100-150 KB), and a browser that outlived the server by a second.
_PROFILES: dict[str, Path | None] = {}


@contextmanager
def browser_profile(prefix: str):
    """A folder for an export's Chromium to keep its profile in (choreographer's tmp_dir), removed
    when the export ends, or by shutdown() once the browser is killed."""
    folder = tempfile.mkdtemp(prefix=prefix)
    _PROFILES[folder] = None
    try:
        yield folder
    finally:
        beside = _PROFILES.pop(folder, None)
        shutil.rmtree(folder, ignore_errors=True)
        if beside is not None:
            shutil.rmtree(beside, ignore_errors=True)


def browser_started(folder: str) -> None:
    """Once the browser keeping its profile in `folder` runs: the folder of its singleton socket, which
    Chromium makes in the temporary folder (org.chromium.Chromium.*) and links from the profile. It
    takes the link away first as it dies, so the folder is found now, while the link is there."""
    try:   # (the walk raises where a folder goes as it is walked: the browser's own, or ours removed)
        for link in Path(folder).rglob("SingletonSocket"):
            beside = Path(os.readlink(link)).parent
            if beside.name.startswith("org.chromium.") and folder in _PROFILES:   # (not a link of another kind)
                _PROFILES[folder] = beside
    except OSError:
        pass


def browser_pids() -> list[int]:
    """The processes of the browsers this process started (its descendants named chrom*): an export's."""
    from engine.devices import host_memory  # noqa: PLC0415 - only where an export ran

    pids = []
    for pid in host_memory.descendants():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if b"chrom" in f.read().split(b"\0")[0].lower():
                    pids.append(pid)
        except OSError:   # gone meanwhile, or not Linux
            continue
    return pids


def _running(pid: int) -> bool:
    """Not yet ended: a process killed is a zombie (state Z) until its parent reaps it."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _stop_browsers() -> None:
    """Every Chromium this process started (its descendants named chrom*) killed, and their profile
    folders removed, each with its singleton socket's: an export stopped part-way."""
    for folder, beside in list(_PROFILES.items()):
        if beside is None:   # a browser stopped as it started: its link, while it is alive
            browser_started(folder)
    killed = []
    for pid in browser_pids():
        try:
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
        except OSError:   # gone meanwhile
            continue
    # gone (a killed process finishes the call it is in: a file it was writing came back after the
    # folder was removed), for at most half a second
    end = time.monotonic() + 0.5
    while time.monotonic() < end and any(_running(pid) for pid in killed):
        time.sleep(0.01)
    for folder, beside in list(_PROFILES.items()):
        shutil.rmtree(folder, ignore_errors=True)
        if beside is not None:
            shutil.rmtree(beside, ignore_errors=True)


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
    if _PROFILES:
        _stop_browsers()
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
