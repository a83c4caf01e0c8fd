"""One fair line for a server's heavy work, and one memory budget for the server as a whole.

Heavy work (chart exports, whole-kernel traces, traces of large blocks, live benchmarks) takes
seconds to a minute and hundreds of MB. Let in as it comes, six exports held every slot a page
view needed and a room of large traces took the server past its memory. Here it waits in one
first-come first-served line with a few places to run (`slots`), and each request reserves its
estimated bytes before it starts: it starts only when it is first in line, a place is free and
its bytes fit what the server's budget leaves, and is refused with a one-line reason if it could
never fit. A waiting request is told its place and a time estimated from recent durations.

Plain engine state, no Streamlit: pages/lib/slots.py shows the place on the page.
"""
from __future__ import annotations

import itertools
import os
import re
import threading
import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Callable

from engine.errors import EngineError

SERVER_MEMORY_ENV = "MATMUL_EXPLORER_SERVER_MEMORY"
MAX_SIZE = 2**60
_SIZE_RE = re.compile(r"(\d+(?:\.\d+)?(?:e\d+)?)\s*([kmgt]?)(?:i?b)?", re.I)
# Before any request of a kind has finished, its waiters are told this many seconds each.
FIRST_GUESS_S = 5.0
# How many recent durations of a kind its estimate averages.
RECENT = 8


def parse_size(name: str, raw: str) -> int:
    """'4GiB', '512M', '4294967296' -> bytes; a one-line EngineError naming the variable otherwise."""
    m = _SIZE_RE.fullmatch(raw.strip())
    if not m:
        raise EngineError(f"{name} must be a size like 4GiB or 4294967296, got {raw!r}")
    size = float(m.group(1)) * 1024 ** " KMGT".index(m.group(2).upper() or " ")
    # 1e400 is a float's inf, and int(inf) had failed as a traceback; no machine has an exbibyte
    if not 1 <= size <= MAX_SIZE:
        raise EngineError(f"{name} must be a size from 1 byte to 1 EiB, like 4GiB or 4294967296, got {raw!r}")
    return int(size)


def machine_memory() -> int:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 8 * 2**30


def server_memory_limit() -> int:
    """$MATMUL_EXPLORER_SERVER_MEMORY (bytes, or like 2GiB), by default half the machine's memory:
    what the server and its worker processes may hold together."""
    raw = os.environ.get(SERVER_MEMORY_ENV, "").strip()
    return parse_size(SERVER_MEMORY_ENV, raw) if raw else machine_memory() // 2


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def _mb(n: int) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


@dataclass(eq=False)
class Ticket:
    kind: str
    need: int
    number: int
    started: float | None = None


@dataclass(frozen=True)
class Place:
    """Where a waiting request stands: 1 is next. seconds: the estimated wait."""
    place: int
    seconds: float
    memory: bool = False   # first in line, waiting for memory rather than a free place

    def text(self) -> str:
        why = ", waiting for memory to be freed" if self.memory else ""
        return f"{ordinal(self.place)} in line, about {max(1, round(self.seconds))} s{why}"


@dataclass
class Line:
    """slots: how many requests run at once. budget(): the server's bytes (read at each admission,
    so a changed setting applies); held(): what the server holds besides the requests running
    here (its interpreter, caches, workers), also read at each admission."""
    slots: int
    budget: Callable[[], int] = server_memory_limit
    held: Callable[[], int] = lambda: 0
    clock: Callable[[], float] = time.monotonic
    _cond: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _waiting: list = field(default_factory=list, repr=False)
    _running: list = field(default_factory=list, repr=False)
    _durations: dict = field(default_factory=dict, repr=False)
    _numbers: itertools.count = field(default_factory=itertools.count, repr=False)
    reserved: int = 0
    _moves: int = 0

    def estimate(self, kind: str) -> float:
        recent = self._durations.get(kind)
        return sum(recent) / len(recent) if recent else FIRST_GUESS_S

    def _free(self) -> int:
        return self.budget() - self.held() - self.reserved

    def _place(self, ticket: Ticket) -> Place:
        """Work ahead of the ticket (what is left of the running requests, the waiting ones before
        it), shared over the slots."""
        now = self.clock()
        ahead = self._waiting[:self._waiting.index(ticket)]
        left = sum(max(0.0, self.estimate(t.kind) - (now - t.started)) for t in self._running)
        left += sum(self.estimate(t.kind) for t in ahead)
        first_blocked = not ahead and len(self._running) < self.slots
        return Place(len(ahead) + 1, left / self.slots, memory=first_blocked)

    def _moved(self) -> None:
        """Under the lock: the line changed, every waiter looks again (and one that was away
        telling its page its place sees the change by the count)."""
        self._moves += 1
        self._cond.notify_all()

    def _may_start(self, ticket: Ticket) -> bool:
        # Alone and still over what is free (what the server holds grew since it came): it runs,
        # since nothing it could wait for would free more, and the next ones wait for it.
        return (self._waiting[0] is ticket and len(self._running) < self.slots
                and (ticket.need <= self._free() or not self._running))

    def snapshot(self) -> dict:
        with self._cond:
            return {"waiting": [t.kind for t in self._waiting], "running": [t.kind for t in self._running],
                    "reserved": self.reserved}

    def number(self) -> int:
        """A place in line taken now, for a request that comes to the line a moment later (turn's
        number): a click is numbered when it arrives, and the page drawn before its request gets
        here takes longer for one session than for the next."""
        with self._cond:
            return next(self._numbers)

    @contextmanager
    def turn(self, kind: str, need: int = 0, on_wait: Callable[[Place], None] | None = None,
             poll_s: float = 1.0, number: int | None = None):
        """Holds a place to run `kind` with `need` bytes reserved; while it waits, on_wait(Place)
        is called in the waiting thread each time its place changes and every poll_s (the time
        estimate moves on). A request that could not fit even with nothing else running is refused.
        number: its place, taken earlier (number()): it goes before the waiting requests numbered
        after it (not before those already running)."""
        with self._cond:
            room = self.budget() - self.held()
            if need > room:
                raise EngineError(f"this needs about {_mb(need)} of memory and the server has {_mb(max(room, 0))} "
                                  f"of its {_mb(self.budget())} left beside what it holds ({SERVER_MEMORY_ENV})")
            ticket = Ticket(kind, need, next(self._numbers) if number is None else number)
            self._waiting.insert(sum(t.number < ticket.number for t in self._waiting), ticket)
            self._moved()   # those it went before are told their new place
            try:
                while not self._may_start(ticket):
                    seen = self._moves
                    if on_wait is not None:
                        place = self._place(ticket)
                        self._cond.release()   # the page's update may take a moment: not under the lock
                        try:
                            on_wait(place)
                        finally:
                            self._cond.acquire()
                    if seen == self._moves and not self._may_start(ticket):
                        self._cond.wait(poll_s)
            except BaseException:
                self._waiting.remove(ticket)
                self._moved()
                raise
            self._waiting.remove(ticket)
            self._running.append(ticket)
            self.reserved += need
            ticket.started = self.clock()
            self._moved()   # the next in line moves up a place
        try:
            yield
        finally:
            with self._cond:
                self._running.remove(ticket)
                self.reserved -= need
                self._durations.setdefault(kind, deque(maxlen=RECENT)).append(self.clock() - ticket.started)
                self._moved()


# A page script expected to take longer than this (its kind's recent average) is costly: costly
# scripts hold all but one of the slots at most, so a quick view never waits for a slot behind them.
CHEAP_S = 0.15
# A waiting script's deadline is when it came plus this many times its expected duration: the
# earliest deadline goes first, so a 0.05 s view passes a queue of 0.5 s ones, and a costly script
# waits at most this many of its own durations for views that keep coming after it.
AGING = 10.0


class Slots:
    """How many page scripts compute at once in one server (count), the cheapest first.

    A room's page scripts share one interpreter lock, so a few run at once and the rest wait. Served
    first come first served, thirty sessions opening the Benchmarks page (0.2 to 0.6 s of one core
    each) held a 0.05 s view of a quiet page for seconds behind them. Here each script is expected
    to take the interpreter time its kind (the page) took lately (the thread's CPU time, work_clock:
    wall time grows with the room, and every page would look costly when it is full); waiting scripts
    go earliest deadline first (when
    they came, plus AGING times what they are expected to take), and costly ones hold `costly` slots
    at most (count - 1 unless told; one, where there is one). The interpreter lock is shared in turns:
    a quick view beside three costly scripts ran at a quarter of its speed, and thirty sessions
    opening the Benchmarks page held quiet views over 1 s for a minute and a half (load_room.py).
    A page not seen yet is expected to be costly
    (first_guess) until one of its scripts has run: six sessions opening the Benchmarks page first
    thing took every slot from the quick pages while its first, cold views ran. Semaphore-like: acquire() and release() in the same thread."""

    def __init__(self, count: int, clock: Callable[[], float] = time.monotonic,
                 work_clock: Callable[[], float] = time.thread_time, first_guess: float = 0.5,
                 costly: int | None = None):
        self.count, self.clock, self.work_clock, self.first_guess = count, clock, work_clock, first_guess
        self.costly = max(1, count - 1 if costly is None else min(costly, count - 1))
        self._cond = threading.Condition()
        self._waiting: list[tuple[float, int, str]] = []
        self._running: list[str] = []
        self._durations: dict[str, deque] = {}
        self._numbers = itertools.count()
        self._mine = threading.local()

    def expected(self, kind: str) -> float:
        recent = self._durations.get(kind)
        return sum(recent) / len(recent) if recent else self.first_guess

    def _costly(self, kind: str) -> bool:
        return self.expected(kind) > CHEAP_S

    def _next(self):
        """Under the lock: the waiter that may take a free slot now, if any."""
        if len(self._running) >= self.count:
            return None
        costly = sum(map(self._costly, self._running))
        for entry in self._waiting:
            if not self._costly(entry[2]) or costly < self.costly:
                return entry
        return None

    def acquire(self, blocking: bool = True, kind: str = "") -> bool:
        with self._cond:
            entry = (self.clock() + AGING * self.expected(kind), next(self._numbers), kind)
            self._waiting.append(entry)
            self._waiting.sort()
            try:
                while self._next() is not entry:
                    if not blocking:
                        return False
                    self._cond.wait()
            finally:
                self._waiting.remove(entry)
            self._running.append(kind)
        self._mine.held = (kind, self.work_clock())
        return True

    def release(self) -> None:
        kind, started = self._mine.held
        with self._cond:
            self._running.remove(kind)
            self._durations.setdefault(kind, deque(maxlen=RECENT)).append(self.work_clock() - started)
            self._cond.notify_all()

    def snapshot(self) -> dict:
        with self._cond:
            return {"waiting": [kind for _, _, kind in self._waiting], "running": list(self._running)}
