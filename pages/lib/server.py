"""What the app does once per server, beside the pages: background compiles, and stopping.

At the first page view: the CPU trace workers start (a process takes about a second to import what
it runs), every page's default view is queued for the background compiler, and a watcher waits
for Streamlit to start stopping (Ctrl-C, SIGTERM) to end the engine's workers and compilers at
once (engine/lifecycle.py), instead of at interpreter exit, after Streamlit's own shutdown.
"""
from __future__ import annotations

import gc
import os
import signal
import sys
import threading
import time

import streamlit as st

from engine import lifecycle
from engine.kernels import build, registry, warmup
from engine.tracing import tracer
from pages.lib.slots import PAGE_SLOTS

_STARTED = threading.Event()
_LOCK = threading.Lock()
_OFFERED: set[tuple] = set()    # what the pages have offered already: a few dozen choices in all
# The pages whose as-compiled counts need each kernel's SASS listing as well as its trace.
LISTING_VIEWS = ("bank_conflicts", "ladder")
# How long Streamlit's own shutdown may take, after the engine's, before the process ends anyway.
EXIT_GRACE_S = 1.0
SWITCH_INTERVAL_S = 0.001


def enabled() -> bool:
    """MATMUL_EXPLORER_WARMUP=0 turns the background compiles off (tests/conftest.py does, so that each
    test's CPU is its own; tests/test_stop.py starts servers with them on)."""
    return os.environ.get("MATMUL_EXPLORER_WARMUP", "1") != "0"


def device() -> str:
    return "gpu" if tracer.resolve_source("auto") == "gpu" else "cpu"


def start_once() -> None:
    """Module state, not a Streamlit cache: a client's "clear cache" must not start it again."""
    with _LOCK:
        if _STARTED.is_set():
            return
        _STARTED.set()
    # The event loop (every browser's messages) gives up the interpreter lock at each socket write and
    # waits to get it back from whichever page script is computing: up to the switch interval each
    # time. 1 ms instead of Python's 5 ms lets it through five times sooner.
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    # What is loaded by now (Streamlit, plotly, pandas, the engine: some 150,000 objects) stays for the
    # server's life. Out of the collector's sight, a full collection no longer walks it: each took
    # 0.1 to 0.2 s holding the interpreter lock, and stalled every session's page at once.
    gc.freeze()
    if device() == "cpu":
        tracer.CPU_WORKERS.warm()   # the first trace of a fresh server does not wait for them
    _watch_for_stop()
    if enabled():
        warmup.QUEUE.pages_busy = _pages_busy
        warmup.QUEUE.ask(default_jobs(), warmup.DEFAULTS)


def _pages_busy() -> bool:
    """Whether a page script is being drawn or waits for its turn (the background compiles wait)."""
    now = PAGE_SLOTS.snapshot()
    return bool(now["running"] or now["waiting"])


def default_jobs() -> list[warmup.Job]:
    """Every page's default view: each kernel a page that traces lists, at its default parameters."""
    out = []
    for view in registry.TRACED_VIEWS:
        for kernel in registry.showing(view):
            out += warmup.jobs(kernel, [{}], device(), view in LISTING_VIEWS)
    return out


def offer(kernels, options: dict | None = None, listing: bool = False) -> None:
    """A page's on-screen choices (its kernels, and for each every combination of `options` it
    takes, e.g. TILE and PAD), queued for the background compiler ahead of the other pages'."""
    if not enabled():
        return
    # Pages offer on every rerun (each slider step): the same offer again adds nothing to the queue,
    # and working its jobs out again took the Ladder page 50 ms a rerun.
    offered = (tuple(kernels), tuple(sorted((k, tuple(v)) for k, v in (options or {}).items())), listing, device())
    with _LOCK:
        if offered in _OFFERED:
            return
        _OFFERED.add(offered)
    choices = warmup.choices_of(options or {})
    jobs = [j for k in kernels for j in warmup.jobs(k, choices, device(), listing)]
    warmup.QUEUE.ask(jobs, warmup.NEARBY)


def announce_compiles() -> None:
    """This script thread's compiles say what they are doing ("Compiling warptile for the CPU...")
    in a spinner while the page waits for them."""
    build.ANNOUNCE.fn = lambda what: st.spinner(f"{what}...")


def _watch_for_stop() -> None:
    """Streamlit stops on SIGINT and SIGTERM by its own signal handlers; the engine is stopped at once
    by a handler of ours that runs before Streamlit's (below), else as soon as the runtime says it is
    stopping. The process then ends EXIT_GRACE_S after the engine's shutdown, whatever Streamlit's own
    is at. A signal whose handler before ours was no function (the default, or ignored) stops the
    engine and the process all the same: a server is stopped by either only when it is asked to."""
    from streamlit.runtime import Runtime, RuntimeState  # noqa: PLC0415 - only under a real server

    if not Runtime.exists():   # AppTest, bare mode: atexit stops the engine (engine/lifecycle.py)
        return
    runtime = Runtime.instance()
    asked = threading.Event()

    # Streamlit's handler only asks its web server to stop, and the runtime is told (STOPPING) once that
    # server's graceful shutdown has waited for its connections: 3 to 15 s, once over 20, while a page
    # was reading a large upload. Signal handlers are set from the main thread, the event loop's: ours
    # is put there in front of Streamlit's, which it still calls.
    def chain() -> None:
        for signum in (signal.SIGINT, signal.SIGTERM):
            before = signal.getsignal(signum)

            def handler(number, frame, before=before) -> None:
                asked.set()
                if callable(before):
                    before(number, frame)
            signal.signal(signum, handler)

    try:
        runtime._get_async_objs().eventloop.call_soon_threadsafe(chain)   # private: the loop it runs on
    except (AttributeError, RuntimeError):   # another Streamlit: the runtime's state alone tells
        pass

    def watch() -> None:
        while not asked.wait(0.1) and runtime.state not in (RuntimeState.STOPPING, RuntimeState.STOPPED):
            pass
        try:
            lifecycle.shutdown()
        finally:   # whatever it raised, the process still ends
            # Streamlit's own shutdown is usually quick; this is the bound on it: its web server's wait
            # for connections, or a thread stuck in a C call, must not keep a stopped server alive.
            # Everything of ours has ended above.
            time.sleep(EXIT_GRACE_S)
            os._exit(0)

    threading.Thread(target=watch, name="matmul-explorer-stop-watch", daemon=True).start()
