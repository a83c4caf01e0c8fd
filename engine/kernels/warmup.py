"""Background compiles: the builds a user is one click away from, made before the click.

A page, once drawn, names what it offers on screen (its kernel choices, TILE, padding) and every
page's default view is queued at the first page view; one daemon thread compiles them, one at a
time, at the lowest priority, the page's own choices first. That is bounded work (a few dozen
builds, under two minutes of one core from a fresh cache), never the whole space of parameters: a
view that needs something else compiles it when it is asked for, and says so. `stop()` ends it at
once (the compiler in progress is killed by build.stop()).
"""
from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from engine.errors import EngineError
from engine.kernels import build, registry, sources

# At most this many builds are ever queued by one process: pages ask for a few dozen in all, so
# this only guards against a page that asks for too much.
LIMIT = 96
NEARBY, DEFAULTS = 0, 1     # priorities: the page on screen first, then every page's default view
YIELD_S = 10.0              # how long a build waits at most for the page views to be done


@dataclass(frozen=True, order=True)
class Job:
    """One build: "cpu" (the CPU trace library), "gpu" (the instrumented cubin) or "sass" (the
    plain cubin and its SASS listing), of one source with the defines it uses."""
    what: str
    file: str
    params: tuple[tuple[str, int], ...]

    def make(self) -> None:
        params = dict(self.params)
        if self.what == "cpu":
            build.build_cpu_library(self.file, params)
        elif self.what == "gpu":
            build.build_cubin(self.file, params, traced=True)
        else:
            from engine.kernels import sass  # noqa: PLC0415 - sass builds on this module's caller
            sass.memory_instructions(self.file, params)


def jobs(kernel: str, choices: Iterable[Mapping[str, int]], device: str, listing: bool = False) -> list[Job]:
    """The builds a trace of `kernel` needs for each choice of its parameters (each merged over its
    defaults; a choice its rules refuse is left out), on `device` ("cpu" or "gpu"), and its SASS
    listing too where the page shows the counts as compiled."""
    spec = registry.get(kernel)
    if not spec.traceable:
        return []
    out = []
    for choice in choices:
        params = {**spec.default_params(), **spec.takes(choice)}
        if not spec.accepts(params):
            continue
        for launch in spec.launches:
            used = tuple(build.used_defines(sources.load(launch.file), params).items())
            out.append(Job(device, launch.file, used))
        if listing:
            last = spec.launches[-1].file
            out.append(Job("sass", last, tuple(build.used_defines(sources.load(last), params).items())))
    return out


def choices_of(options: Mapping[str, Iterable[int]]) -> list[dict[str, int]]:
    """Every combination of the values a page offers, e.g. {"TILE": (8, 16, 32), "PAD": (0, 1)}."""
    names = list(options)
    return [dict(zip(names, values)) for values in itertools.product(*(tuple(options[n]) for n in names))]


class Warmup:
    """One background thread that compiles what it is asked for, the most urgent first."""

    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self._queue: queue.PriorityQueue = queue.PriorityQueue()
        self._seen: set[Job] = set()
        self._order = itertools.count()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.done: dict[Job, float | str] = {}     # seconds it took, or why it failed
        self.busy = 0.0                             # seconds spent compiling
        # Whether a page view is being drawn (the app sets it): a build waits for a quiet moment,
        # for at most YIELD_S, so that the first views of a fresh server are not slowed by builds
        # meant for later clicks (its compilers are niced, but their Python side shares the lock).
        self.pages_busy: Callable[[], bool] = lambda: False

    def ask(self, jobs: Iterable[Job], priority: int = NEARBY) -> int:
        """Queues what is not queued yet (within the limit); returns how many were added."""
        added = 0
        with self._lock:
            if self._stop.is_set():
                return 0
            for job in jobs:
                if job in self._seen or len(self._seen) >= self.limit:
                    continue
                self._seen.add(job)
                self._queue.put((priority, next(self._order), job))
                added += 1
            if added and self._thread is None:
                self._thread = threading.Thread(target=self._run, name="matmul-explorer-warmup", daemon=True)
                self._thread.start()
        return added

    def _run(self) -> None:
        build.BACKGROUND.on = True
        while not self._stop.is_set():
            try:
                _, _, job = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            if self._stop.is_set():
                return
            deadline = time.monotonic() + YIELD_S
            while self.pages_busy() and time.monotonic() < deadline and not self._stop.wait(0.05):
                pass
            start = time.perf_counter()
            try:
                job.make()
                self.done[job] = time.perf_counter() - start
            except EngineError as exc:     # the request that needs it reports it
                self.done[job] = str(exc)
            except Exception as exc:  # noqa: BLE001 - a background build never takes the server down
                self.done[job] = f"{type(exc).__name__}: {exc}"
            self.busy += time.perf_counter() - start

    def wait(self, timeout: float) -> bool:
        """Until the queue is empty and the last build done (for scripts and tests)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self._lock:
                if self._queue.empty() and len(self.done) == len(self._seen):
                    return True
            time.sleep(0.05)
        return False

    def stop(self) -> None:
        """No more builds; the one in progress is killed by build.stop() when the app stops."""
        self._stop.set()


# The one background queue of this process (the app asks it from every page).
QUEUE = Warmup()
