"""How many page scripts compute at once in this server, and the line heavy work waits in.

A room of sessions shares one Python process: its event loop (every browser's messages, health
checks) needs the interpreter lock between its steps, so computing threads are let in a few at a
time and the rest wait without taking the lock. app.py holds a page slot while a page's script
runs. Heavy work (whole-kernel traces, large blocks, chart exports, live benchmarks) gives its page
slot up and waits its turn in the server's one line (engine/devices/line.py), its place shown on
the page, so that a page view never waits behind it.
"""
from __future__ import annotations

import os
import queue
import threading
from contextlib import contextmanager

import streamlit as st
from streamlit.runtime.scriptrunner import add_script_run_ctx, get_script_run_ctx

from engine.devices import line

# Page scripts that may compute at once in this server. The server's event loop (every browser's
# messages, health checks) needs Python's interpreter lock between its steps, and waits its turn
# behind every thread that is computing: with a room of 30 sessions computing at once it got a turn
# every ~150 ms and answered nothing for seconds. Scripts beyond these slots wait without taking
# the lock; the kernels themselves run in worker processes. The quickest views go first
# (line.Slots): a quiet page's view does not wait behind a room opening the Benchmarks page. Costly
# scripts (the Benchmarks page, 0.3 to 0.9 s of the interpreter each) run one per two cores: they
# share the one interpreter lock in turns with the quick views, which ran at a quarter of their
# speed beside three of them.
PAGE_SLOTS = line.Slots(max(2, 2 * (os.cpu_count() or 1)), costly=max(1, (os.cpu_count() or 1) // 2))
# Heavy work runs a few at a time, leaving a core (and a CPU trace worker) to the page views.
# What the server holds besides it is set by pages/lib/cached.py (its caches and processes).
LINE = line.Line(max(1, (os.cpu_count() or 1) - 1))
_SLOTS = threading.local()


@contextmanager
def page_slot(page: str = ""):
    """Held by app.py while a page's script runs (page: its name, what its views take is learnt)."""
    PAGE_SLOTS.acquire(kind=page)
    _SLOTS.page, _SLOTS.kind = True, page
    try:
        yield
    finally:
        _SLOTS.page = False
        PAGE_SLOTS.release()


@contextmanager
def off_page_slot():
    """The page slot given up for a while (waiting for heavy work, or for another session's heavy
    result), so that it never holds back another session's page view; taken back after."""
    gave_up = getattr(_SLOTS, "page", False)
    if gave_up:
        PAGE_SLOTS.release()
        _SLOTS.page = False
    try:
        yield
    finally:
        if gave_up:
            PAGE_SLOTS.acquire(kind=_SLOTS.kind)
            _SLOTS.page = True


@contextmanager
def from_any_thread(fn):
    """A function that calls fn from whatever thread calls it, for as long as the block runs: an
    animation export reports each frame from the thread that drives Chromium, where a page element
    raised NoSessionContext (Streamlit knows a page's script only in its own threads) and ended the
    export in Streamlit's error box. The calls are handed to a thread of this page's script, made
    as Streamlit lets a page make one (its context attached before it starts)."""
    calls: queue.SimpleQueue = queue.SimpleQueue()

    def relay():
        while (args := calls.get()) is not None:
            fn(*args)
    thread = threading.Thread(target=relay, name="page-relay", daemon=True)
    ctx = get_script_run_ctx()
    if ctx is not None:
        add_script_run_ctx(thread, ctx)
    thread.start()
    try:
        yield lambda *args: calls.put(args)
    finally:
        calls.put(None)
        thread.join(timeout=5)


def _show_place(what: str):
    """on_wait for the line: the page's own line saying where it stands ("3rd in line, about 8 s"),
    emptied once its turn comes; nothing outside a page's script (background threads)."""
    if get_script_run_ctx() is None:
        return None, lambda: None
    box = st.empty()
    return (lambda place: box.info(f"{what}: {place.text() if place else 'being made for another session, shared when ready'}",
                                   icon=":material/hourglass_top:")), box.empty


@contextmanager
def shared_wait(computing: bool, what: str):
    """While waiting for another session's identical heavy request, the page says so."""
    on_wait, done = _show_place(what) if computing else (None, lambda: None)
    if on_wait is not None:
        on_wait(None)
    try:
        yield
    finally:
        done()


@contextmanager
def heavy(kind: str, need: int = 0, what: str = "Waiting", number: int | None = None):
    """Runs the block as heavy work of `kind` reserving `need` bytes of the server's memory, off the
    page slot. A thread already in its turn keeps it for the work nested in its work (what it
    reserved covers it). number: its place in line, taken when the click came (LINE.number())."""
    if getattr(_SLOTS, "heavy", False):
        yield
        return
    on_wait, done = _show_place(what)
    with off_page_slot():
        try:
            with LINE.turn(kind, need, on_wait, number=number):
                done()
                _SLOTS.heavy = True
                try:
                    yield
                finally:
                    _SLOTS.heavy = False
        finally:
            done()


# Heavy work's CPU priority below the page views' (Linux nice, 10 more): on two cores an export's
# Chromium and encoder took the cores from every page view for the seconds it ran.
HEAVY_NICE = 10


def below_page_views(compute):
    """compute() on a thread of its own whose CPU priority is below the page views' (what it starts
    inherits it: Chromium's processes, encoder threads), the page's context attached so that its
    progress reaches the page. The thread ends with the work, so nothing else runs at its priority.
    (The engine's shared threads and trace workers keep theirs.)"""
    done: dict = {}
    in_turn = getattr(_SLOTS, "heavy", False)   # work nested in it keeps the caller's turn

    def run():
        _SLOTS.heavy = in_turn
        try:   # relative to the thread's own: a server started niced stays so, and its heavy work lower still
            me = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, me, min(19, os.getpriority(os.PRIO_PROCESS, me) + HEAVY_NICE))
        except (OSError, AttributeError):
            pass   # not Linux, or not allowed: it runs at the page views' priority
        try:
            done["value"] = compute()
        except BaseException as exc:  # noqa: BLE001 - raised again in the page's thread
            done["error"] = exc
    worker = threading.Thread(target=run, name="heavy-work", daemon=True)
    ctx = get_script_run_ctx()
    if ctx is not None:
        add_script_run_ctx(worker, ctx)
    worker.start()
    worker.join()
    if "error" in done:
        raise done["error"]
    return done["value"]
