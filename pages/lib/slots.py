"""How many page scripts compute at once in this server, and where whole-kernel work waits.

A room of sessions shares one Python process: its event loop (every browser's messages, health
checks) needs the interpreter lock between its steps, so computing threads are let in a few at a
time and the rest wait without taking the lock. app.py holds a page slot while a page's script
runs; pages/lib/cached.py moves whole-kernel work to its own slots.
"""
from __future__ import annotations

import os
import threading
from contextlib import contextmanager

# Page scripts that may compute at once in this server. The server's event loop (every browser's
# messages, health checks) needs Python's interpreter lock between its steps, and waits its turn
# behind every thread that is computing: with a room of 30 sessions computing at once it got a turn
# every ~150 ms and answered nothing for seconds. Scripts beyond these slots wait without taking
# the lock; the kernels themselves run in worker processes.
PAGE_SLOTS = threading.Semaphore(max(2, 2 * (os.cpu_count() or 1)))
# Whole-kernel work (the tables below a figure) gives its page slot up and queues here instead, so
# that it never holds back another session's figure and leaves a core (and a CPU trace worker) to
# the figures. A thread that holds a slot keeps it for the work nested in its work.
WHOLE_KERNEL_SLOTS = threading.Semaphore(max(1, (os.cpu_count() or 1) - 1))
_SLOTS = threading.local()


@contextmanager
def page_slot():
    """Held by app.py while a page's script runs."""
    with PAGE_SLOTS:
        _SLOTS.page = True
        try:
            yield
        finally:
            _SLOTS.page = False


@contextmanager
def whole_kernel_slot():
    if getattr(_SLOTS, "whole", False):
        yield
        return
    gave_up = getattr(_SLOTS, "page", False)
    if gave_up:
        PAGE_SLOTS.release()
        _SLOTS.page = False
    try:
        with WHOLE_KERNEL_SLOTS:
            _SLOTS.whole = True
            try:
                yield
            finally:
                _SLOTS.whole = False
    finally:
        if gave_up:
            PAGE_SLOTS.acquire()
            _SLOTS.page = True


