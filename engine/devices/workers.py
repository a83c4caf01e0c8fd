"""Worker processes: every kernel run, CPU and GPU, happens in one, never in the app's process.

A kernel is code we compile and run, and a wrong one faults, hangs or scribbles over memory. Run in
the app's process, that would take the server and every session with it. Run here, it costs the one
request a one-line message; the worker is replaced and everyone else carries on.

Both sides speak one protocol over a pipe: requests (op, payload); replies ("ok", value) or
("error", message, fatal). `serve` is the loop a worker runs; `Worker` is the app's handle on one
worker process, `Pool` a set of them for requests that may run side by side (CPU traces).
Processes are spawned, never forked: a fork of a threaded server copies locks held by other threads.
"""
from __future__ import annotations

import multiprocessing
import os
import queue
import signal
import sys
import threading
import time
import traceback
import weakref
from collections.abc import Mapping
from contextlib import contextmanager
from multiprocessing import resource_tracker, spawn
from multiprocessing.reduction import ForkingPickler
from typing import Callable

from engine.devices import host_memory, shm
from engine.errors import EngineError, WorkerCrashed

# The longest a request may be given: inf, or 1e10, had passed as timeouts and failed in the wait for
# the worker (an OverflowError, a traceback, on every request).
MAX_TIMEOUT_S = 86400.0


def timeout_from_env(name: str, default: float) -> float:
    """A request's timeout in seconds from the environment variable `name` (default if unset), read
    when a request is made: a value that is no number of seconds from 0 to a day is a one-line error
    for that request, never a traceback (nor one on import)."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise EngineError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not 0 < value <= MAX_TIMEOUT_S:
        raise EngineError(f"{name} must be a positive number of seconds, at most {MAX_TIMEOUT_S:,.0f}, got {raw!r}")
    return value


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def serve(conn, what: str, requests: Mapping[str, Callable],
          is_fatal: Callable[[BaseException], bool] = lambda exc: False) -> None:
    """A worker's loop, and the one place its requests are dispatched: requests[op](payload, reply)
    answers each, by returning a value or by calling reply(value) itself (to release what it handed
    over once it is sent). `what` names the worker in messages. An EngineError is the user's one-line
    message; any other exception is a defect, so its type is named and its traceback goes to the
    worker's stderr (the server log), never to the user. After a fatal error the worker exits at
    once and the app starts a fresh one."""
    while True:
        try:
            op, payload = conn.recv()
        except (EOFError, OSError):
            return
        sent = []

        def reply(value):
            conn.send(("ok", value))
            sent.append(True)  # noqa: B023 - called within this iteration only (by the request or below)

        try:
            if op not in requests:
                raise ValueError(f"the {what} has no request {op!r}")
            value = requests[op](payload, reply)
            if not sent:
                reply(value)
        except Exception as exc:  # noqa: BLE001 - every failure becomes a reply, the loop goes on
            if sent:   # answered already (a clean-up after the reply failed): one reply per request
                traceback.print_exc()
                continue
            fatal = is_fatal(exc)
            message = _first_line(exc)
            if not fatal and not isinstance(exc, EngineError):
                message = f"{type(exc).__name__}: {message}"
                traceback.print_exc()
            conn.send(("error", message, fatal))
            if fatal:
                os._exit(3)


def _death(code: int | None) -> str:
    """How a worker ended, in words: a signal by name (SIGSEGV, SIGBUS, ...), else the exit code."""
    if code is not None and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            pass
    return f"exit code {code}"


def _child(target: Callable, conn) -> None:
    """A worker's first step: a Ctrl-C in the terminal reaches every process of its group, workers
    included; the app decides what stops (it stops its workers itself), so a worker ignores it
    rather than dying mid-request with a traceback in the terminal."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _stop_now)
    # Blocked since before the process existed (Worker.__init__): a Ctrl-C in the bootstrap waited,
    # and is dropped here, ignored, rather than ending the worker with Python's own traceback.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    target(conn)


def _stop_now(signum, frame) -> None:
    """A worker asked to stop (Worker.stop, the app stopping) ends what it started first: a compiler
    runs in a session of its own, so killing the worker alone had left it compiling after the app
    was gone. This runs between two steps of whatever the worker was doing, which may hold any of
    the engine's locks (build._run holds one while it starts a compiler), so it takes none: every
    process below this one is killed, found in /proc (a compiler just forked and not yet listed
    anywhere included), and its unfinished build folders go (the app sweeps what a race leaves,
    cache.sweep_opened)."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)   # a second request while this runs changes nothing
    for pid in host_memory.descendants():
        try:
            # a compiler leads a session of its own: its group holds the stages it started
            os.killpg(pid, signal.SIGKILL) if os.getpgid(pid) == pid else os.kill(pid, signal.SIGKILL)
        except OSError:
            continue
    cache = sys.modules.get("engine.kernels.cache")
    if cache is not None:
        cache.discard_in_flight_now()
    os._exit(0)


_START_LOCK = threading.Lock()


@contextmanager
def _without_main():
    """Starts a worker without the parent's main script. Python's spawn runs the parent's __main__
    again in each new process (as __mp_main__) so that what it defines can be unpickled there; a
    worker's target lives in the engine, so that would only cost it: `streamlit run app.py` would
    run app.py (its imports and Streamlit calls) in every worker, and a script without an
    `if __name__ == "__main__"` guard would trace again in each worker, which then dies. The
    preparation data spawn sends loses its two init_main entries while this worker starts."""
    real = spawn.get_preparation_data

    def without_main(name):
        return {k: v for k, v in real(name).items() if k not in ("init_main_from_name", "init_main_from_path")}

    with _START_LOCK:
        spawn.get_preparation_data = without_main
        try:
            yield
        finally:
            spawn.get_preparation_data = real


_LIVE: weakref.WeakSet = weakref.WeakSet()     # every Worker of this process, for stop_all()
# Set by stop_all: no worker starts after it. The web server still answers for a moment after the
# app starts stopping (pages/lib/server.py), and a rerun then started a worker that nothing stopped.
_STOPPED = threading.Event()
_LIVE_LOCK = threading.Lock()


class Worker:
    """One spawned worker process running target(conn), and one request at a time to it."""

    def __init__(self, target: Callable, what: str):
        self.what = what          # "GPU worker", "CPU trace worker": how messages name it
        ctx = multiprocessing.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.process = ctx.Process(target=_child, args=(target, child), daemon=True,
                                   name=f"matmul-explorer-{what.replace(' ', '-')}")
        # Started with SIGINT blocked, a mask the child keeps through fork and exec: until its first
        # step (_child) ignores SIGINT, Python's bootstrap (the interpreter starting, the engine
        # importing) is as long as a second, and a Ctrl-C then killed it with a traceback. Here only
        # this thread blocks it, and only while it starts the process: the app still gets its own.
        # The resource tracker first: the process that starts it unblocks SIGINT in the starting thread
        # afterwards (multiprocessing's own guard of its start), which would undo this block.
        resource_tracker.ensure_running()
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            with _LIVE_LOCK:   # started and listed in one step, or refused once stop_all has begun
                if _STOPPED.is_set():
                    self.conn.close()
                    child.close()
                    raise EngineError(f"the {what} was not started: the app is stopping")
                with _without_main():
                    self.process.start()
                child.close()
                _LIVE.add(self)   # before a Ctrl-C held back meanwhile is raised: stop_all() finds this worker
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)

    def alive(self) -> bool:
        return self.process.is_alive()

    def call(self, op: str, payload, timeout: float, doing: str = "the request"):
        """The worker's answer. A hang past `timeout`, a death or a fatal error stops this worker
        (the caller replaces it) and raises WorkerCrashed; an ordinary error raises EngineError."""
        try:
            self.conn.send((op, payload))
            if not self.conn.poll(timeout):
                self.stop()
                raise WorkerCrashed(f"{doing} ran past {timeout:.0f} s and was stopped; the {self.what} "
                                    "was restarted")
            data = self.conn.recv_bytes()
        except (EOFError, BrokenPipeError, ConnectionResetError, OSError):
            self.process.join(timeout=5)
            how = _death(self.process.exitcode)
            self.stop()
            raise WorkerCrashed(f"the {self.what} died running {doing} ({how}); it was restarted") from None
        try:   # this side's trouble reading a complete answer: the worker is fine
            reply = ForkingPickler.loads(data)
        except Exception as exc:  # noqa: BLE001 - one line for the user, whatever it was
            raise EngineError(f"the answer of the {self.what} to {doing} could not be read here "
                              f"({_first_line(exc)})") from None
        if reply[0] == "ok":
            return reply[1]
        _, message, fatal = reply
        if fatal:
            # It is on its way out (os._exit(3) right after this reply): let it go by itself, so
            # its exit code says so, and kill it only if it lingers.
            self.process.join(timeout=5)
            self.stop()
            raise WorkerCrashed(f"{doing} failed ({message}); the {self.what} was restarted")
        raise EngineError(message)

    def ask_to_stop(self) -> None:
        """SIGTERM: the worker kills its compilers and exits (_stop_now)."""
        try:
            if self.process.is_alive():
                self.process.terminate()
        except OSError:
            pass

    def stop(self, grace: float | None = None) -> None:
        """Asked first, then killed if it has not ended within grace seconds (STOP_GRACE_S): a hung
        request, a Ctrl-C of the CLI and the app stopping all end its compilers with it."""
        self.ask_to_stop()
        self.process.join(timeout=STOP_GRACE_S if grace is None else grace)
        if self.process.is_alive():
            self.process.kill()
        self.process.join(timeout=10)
        self.conn.close()
        shm.sweep(self.process.pid)   # what it was handing over when it died


# How long stopping a worker waits for it to end what it started before killing it: a worker waiting
# on its compiler stops at once; one inside a kernel or a long C call cannot, and is killed.
STOP_GRACE_S = 0.5


def stop_all() -> None:
    """Stops every worker this process started (a request in progress gets WorkerCrashed) and frees
    what they were handing over: for an app that is stopping, which waits for no request. All are
    asked at once, and those not ended within one STOP_GRACE_S are killed; none starts afterwards."""
    with _LIVE_LOCK:
        _STOPPED.set()
        workers = list(_LIVE)
    for worker in workers:
        worker.ask_to_stop()
    deadline = time.monotonic() + STOP_GRACE_S
    for worker in workers:
        worker.stop(grace=max(0.0, deadline - time.monotonic()))


class Pool:
    """Up to `size` workers of one kind, started when first needed; a request waits for a free one.
    A worker that died, hung or failed fatally is dropped and a fresh one takes its place."""

    def __init__(self, target: Callable, what: str, size: int):
        self.target, self.what, self.size = target, what, max(1, size)
        self.idle: queue.LifoQueue[Worker | None] = queue.LifoQueue()
        for _ in range(self.size):
            self.idle.put(None)           # a free slot, its process not started yet
        self.restarts = 0
        self._lock = threading.Lock()
        self._all: list[Worker] = []

    def call(self, op: str, payload, timeout: float, doing: str = "the request"):
        worker = self.idle.get()          # blocks while every worker is busy
        try:
            if worker is None or not worker.alive():
                if worker is not None:
                    self._drop(worker)
                    worker = None         # its slot, should starting a new one fail
                worker = self._start()
            try:
                return worker.call(op, payload, timeout, doing)
            except WorkerCrashed:
                self._drop(worker)
                worker = None
                raise
        finally:
            self.idle.put(worker)

    def warm(self) -> None:
        """Starts every worker not started yet, without waiting for them: a process takes about a
        second to import what it runs, which the first requests would otherwise wait for."""
        taken = []
        while True:
            try:
                taken.append(self.idle.get_nowait())
            except queue.Empty:
                break
        try:
            for i, worker in enumerate(taken):
                if worker is None:
                    taken[i] = self._start()
        finally:   # every slot back, started or not (a start refused as the app stops), or calls wait for good
            for worker in taken:
                self.idle.put(worker)

    def _start(self) -> Worker:
        worker = Worker(self.target, self.what)
        with self._lock:
            self._all.append(worker)
        return worker

    def _drop(self, worker: Worker) -> None:
        worker.stop()
        with self._lock:
            if worker in self._all:
                self._all.remove(worker)
            self.restarts += 1

    def pids(self) -> list[int]:
        with self._lock:
            return [w.process.pid for w in self._all if w.alive()]

    def shutdown(self) -> None:
        with self._lock:
            workers, self._all = self._all, []
        for w in workers:
            w.stop()
