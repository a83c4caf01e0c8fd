"""The server's line for heavy work (engine/devices/line.py): order, places, memory, dedupe. No
timing: threads are stepped with events, and the clock is the test's own."""
from __future__ import annotations

import os
import threading

import pytest

from engine.devices import line, memo
from engine.errors import EngineError

MB = 2**20


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def until(condition) -> None:
    """Until another thread has got there (polled; the test asserts order, never a duration)."""
    for _ in range(2000):
        if condition():
            return
        threading.Event().wait(0.005)
    raise AssertionError("the other thread never got there")


def queued(lines: line.Line, count: int) -> None:
    """Until `count` requests wait (each thread appends itself before it waits)."""
    until(lambda: len(lines.snapshot()["waiting"]) == count)


def worker(lines, kind, need, order, release, places=None, errors=None):
    def run():
        try:
            with lines.turn(kind, need, (places.append if places is not None else None), poll_s=60):
                order.append(kind)
                release.wait(10)
        except EngineError as exc:
            errors.append(str(exc))
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_requests_run_first_come_first_served_with_their_places():
    clock, order = Clock(), []
    lines = line.Line(1, budget=lambda: 10 * MB, clock=clock)
    gates = [threading.Event() for _ in range(4)]
    places = [[] for _ in range(4)]
    threads = []
    for i in range(4):
        threads.append(worker(lines, f"r{i}", 0, order, gates[i], places[i]))
        if i == 0:
            until(lambda: order)
        else:
            queued(lines, i)
    assert order == ["r0"] and lines.snapshot()["waiting"] == ["r1", "r2", "r3"]
    assert places[3][0].place == 3 and places[3][0].text() == "3rd in line, about 15 s"   # 3 x FIRST_GUESS_S
    for i in range(4):
        clock.now += 2.0
        gates[i].set()
        threads[i].join(10)
        if i < 2:   # r3 is told its new place before the next one finishes
            until(lambda i=i: places[3][-1].place == 2 - i)
    assert order == ["r0", "r1", "r2", "r3"]
    # r3 was told each place it moved up to, in order (a place may be told again with a new estimate)
    assert list(dict.fromkeys(p.place for p in places[3])) == [3, 2, 1]
    assert lines.estimate("r0") == 2.0 and lines.reserved == 0


def test_the_wait_is_estimated_from_recent_durations():
    clock = Clock()
    lines = line.Line(2, budget=lambda: 10 * MB, clock=clock)
    for seconds in (4.0, 8.0):
        with lines.turn("export"):
            clock.now += seconds
    assert lines.estimate("export") == 6.0
    assert lines.estimate("trace") == line.FIRST_GUESS_S


def test_memory_is_reserved_while_running_and_a_request_waits_for_it():
    order, gate_a, gate_b = [], threading.Event(), threading.Event()
    lines = line.Line(4, budget=lambda: 100 * MB, held=lambda: 20 * MB)
    a = worker(lines, "a", 60 * MB, order, gate_a)
    until(lambda: order)
    assert lines.reserved == 60 * MB
    places = []
    b = worker(lines, "b", 30 * MB, order, gate_b, places)   # 20 + 60 + 30 > 100: waits, with a free slot
    queued(lines, 1)
    assert order == ["a"] and places[0].memory and "waiting for memory" in places[0].text()
    gate_a.set()
    a.join(10)
    gate_b.set()
    b.join(10)
    assert order == ["a", "b"] and lines.reserved == 0


def test_a_request_that_could_never_fit_is_refused_with_one_line():
    lines = line.Line(1, budget=lambda: 100 * MB, held=lambda: 40 * MB)
    with pytest.raises(EngineError) as exc:
        with lines.turn("rung", 70 * MB):
            pass
    assert "\n" not in str(exc.value) and line.SERVER_MEMORY_ENV in str(exc.value)
    assert lines.snapshot() == {"waiting": [], "running": [], "reserved": 0}


def test_the_head_of_the_line_is_not_overtaken_by_smaller_requests():
    """Strict order: a small request behind one waiting for memory waits too (exports in order)."""
    order, gates = [], [threading.Event() for _ in range(3)]
    lines = line.Line(3, budget=lambda: 100 * MB)
    a = worker(lines, "big", 80 * MB, order, gates[0])
    until(lambda: order)
    b = worker(lines, "big2", 50 * MB, order, gates[1])
    queued(lines, 1)
    c = worker(lines, "small", 1 * MB, order, gates[2])
    queued(lines, 2)
    assert order == ["big"]
    for g in gates:
        g.set()
    for t in (a, b, c):
        t.join(10)
    assert order == ["big", "big2", "small"]


def test_a_failure_or_a_refusal_frees_the_place_and_the_bytes():
    lines = line.Line(1, budget=lambda: 100 * MB)
    with pytest.raises(RuntimeError):
        with lines.turn("trace", 50 * MB):
            raise RuntimeError("boom")
    assert lines.snapshot() == {"waiting": [], "running": [], "reserved": 0}


def test_the_same_heavy_request_twice_is_made_once_in_the_line():
    """What pages/lib/cached.py does for a run's chart files: the memo shares one computation, and
    only that one takes a place in the line."""
    lines = line.Line(1, budget=lambda: 100 * MB)
    cache = memo.Memo("exports", 10 * MB)
    started, gate, made = threading.Event(), threading.Event(), []

    def make():
        with lines.turn("export", 1 * MB):
            made.append(1)
            started.set()
            gate.wait(10)
            return ["files"]
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get(("run", ("png",)), make)))
               for _ in range(5)]
    threads[0].start()
    started.wait(10)
    for t in threads[1:]:
        t.start()
    until(lambda: cache.shared == 4)
    assert lines.snapshot()["waiting"] == []    # the others wait on the result, not in the line
    gate.set()
    for t in threads:
        t.join(10)
    assert made == [1] and results == [["files"]] * 5


@pytest.mark.parametrize("n, text", [(1, "1st"), (2, "2nd"), (3, "3rd"), (4, "4th"), (11, "11th"), (12, "12th"),
                                     (13, "13th"), (21, "21st"), (112, "112th")])
def test_ordinals(n, text):
    assert line.ordinal(n) == text


def test_the_server_budget_setting(monkeypatch):
    monkeypatch.setenv(line.SERVER_MEMORY_ENV, "2GiB")
    assert line.server_memory_limit() == 2 * 2**30
    monkeypatch.setenv(line.SERVER_MEMORY_ENV, "lots")
    with pytest.raises(EngineError, match=line.SERVER_MEMORY_ENV):
        line.server_memory_limit()
    monkeypatch.delenv(line.SERVER_MEMORY_ENV)
    assert line.server_memory_limit() == line.machine_memory() // 2


def test_heavy_work_gives_its_page_slot_up_while_it_waits_and_runs(monkeypatch):
    """pages/lib/slots.py: every page slot stays free for page views while heavy work waits or runs,
    and is taken back after; work nested in a turn does not queue again."""
    from pages.lib import slots
    monkeypatch.setattr(slots, "PAGE_SLOTS", line.Slots(1))
    monkeypatch.setattr(slots, "LINE", line.Line(1, budget=lambda: 100 * MB))
    free_while_waiting, free_inside = [], []
    gate = threading.Event()
    blocker = worker(slots.LINE, "export", 0, [], gate)
    until(lambda: slots.LINE.snapshot()["running"])

    def page():
        with slots.page_slot():
            with slots.heavy("trace", 10 * MB):
                free_inside.append(slots.PAGE_SLOTS.acquire(blocking=False))
                slots.PAGE_SLOTS.release()
                with slots.heavy("trace", 10 * MB):   # nested: its turn already holds
                    free_inside.append(slots.LINE.snapshot()["running"])
    t = threading.Thread(target=page)
    t.start()
    queued(slots.LINE, 1)
    free_while_waiting.append(slots.PAGE_SLOTS.acquire(blocking=False))   # a page view gets in
    slots.PAGE_SLOTS.release()
    gate.set()
    t.join(10)
    blocker.join(10)
    assert free_while_waiting == [True] and free_inside == [True, ["trace"]]
    assert slots.PAGE_SLOTS.acquire(blocking=False)   # given back when the page ended


def test_a_memo_says_when_a_key_is_being_computed():
    """What the page asks before it waits on another session's identical export."""
    cache, started, gate = memo.Memo("m", MB), threading.Event(), threading.Event()

    def slow():
        started.set()
        gate.wait(10)
        return 1
    t = threading.Thread(target=cache.get, args=("k", slow))
    t.start()
    started.wait(10)
    assert cache.computing("k") and not cache.computing("other")
    gate.set()
    t.join(10)
    assert not cache.computing("k") and cache.get("k", lambda: 2) == 1


def taught(slots: line.Slots, work: Clock, costs: dict[str, float]) -> None:
    """What each kind of page script takes, learnt as the server learns it: a script run."""
    for kind, seconds in costs.items():
        assert slots.acquire(kind=kind)
        work.now += seconds
        slots.release()


def script(slots, kind, order, release):
    def run():
        slots.acquire(kind=kind)
        order.append(kind)
        release.wait(10)
        slots.release()
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


def test_a_quick_view_passes_costly_scripts_that_came_before_it():
    """Thirty sessions opening the Benchmarks page (0.2-0.6 s of the interpreter each) held a quiet
    page's 0.05 s view for seconds behind them, first come first served. Costly scripts hold all
    slots but one, and the earliest deadline (arrival + AGING x expected time) goes first."""
    clock, work, order = Clock(), Clock(), []
    slots = line.Slots(2, clock=clock, work_clock=work)
    taught(slots, work, {"benchmarks": 0.5, "coalescing": 0.05})
    gates = {name: threading.Event() for name in ("b1", "b2", "c1", "c2")}
    script(slots, "benchmarks", order, gates["b1"])
    until(lambda: order == ["benchmarks"])
    script(slots, "benchmarks", order, gates["b2"])
    until(lambda: slots.snapshot()["waiting"] == ["benchmarks"])   # a slot is free, kept for quick views
    script(slots, "coalescing", order, gates["c1"])
    until(lambda: order == ["benchmarks", "coalescing"])
    clock.now += 1.0   # the second benchmarks waits with a deadline 5 s after it came; this view 0.5 s after
    script(slots, "coalescing", order, gates["c2"])
    until(lambda: slots.snapshot()["waiting"] == ["coalescing", "benchmarks"])
    gates["b1"].set()   # a costly one ends: the quick view goes first, though it came later
    until(lambda: order[2:] == ["coalescing"])
    gates["c1"].set()
    until(lambda: order[3:] == ["benchmarks"])
    for gate in gates.values():
        gate.set()


def test_a_costly_script_waits_only_so_long_for_views_that_keep_coming():
    """Aging: a view that came AGING x the costly script's time after it goes after it."""
    clock, work, order = Clock(), Clock(), []
    slots = line.Slots(1, clock=clock, work_clock=work)
    taught(slots, work, {"benchmarks": 0.5, "coalescing": 0.05})
    gates = [threading.Event() for _ in range(3)]
    script(slots, "coalescing", order, gates[0])
    until(lambda: order == ["coalescing"])
    script(slots, "benchmarks", order, gates[1])
    until(lambda: slots.snapshot()["waiting"] == ["benchmarks"])
    clock.now += line.AGING * 0.5
    script(slots, "coalescing", order, gates[2])
    until(lambda: slots.snapshot()["waiting"] == ["benchmarks", "coalescing"])
    gates[0].set()
    until(lambda: order == ["coalescing", "benchmarks"])
    for gate in gates:
        gate.set()


def test_the_page_slot_goes_to_a_quick_page_before_a_costly_one(monkeypatch):
    """pages/lib/slots.py: app.py's page slot is taken by page name and a quiet page's view gets the
    next free slot before a Benchmarks view that came first."""
    from pages.lib import slots
    clock, work, order = Clock(), Clock(), []
    monkeypatch.setattr(slots.PAGE_SLOTS, "clock", clock)
    monkeypatch.setattr(slots.PAGE_SLOTS, "work_clock", work)
    monkeypatch.setattr(slots.PAGE_SLOTS, "_durations", {})   # what this server learnt so far is not this test's
    monkeypatch.setattr(slots.PAGE_SLOTS, "count", 1)
    for page, seconds in (("benchmarks", 0.5), ("coalescing", 0.05)):
        with slots.page_slot(page):
            work.now += seconds
    gates = [threading.Event() for _ in range(3)]

    def view(page, gate):
        def run():
            with slots.page_slot(page):
                order.append(page)
                gate.wait(10)
        threading.Thread(target=run, daemon=True).start()
    view("tile_phases", gates[0])
    until(lambda: order == ["tile_phases"])
    view("benchmarks", gates[1])
    until(lambda: slots.PAGE_SLOTS.snapshot()["waiting"] == ["benchmarks"])
    view("coalescing", gates[2])
    until(lambda: len(slots.PAGE_SLOTS.snapshot()["waiting"]) == 2)
    gates[0].set()
    until(lambda: order == ["tile_phases", "coalescing"])
    for gate in gates:
        gate.set()
    until(lambda: order == ["tile_phases", "coalescing", "benchmarks"])


def test_a_script_is_weighed_by_its_interpreter_time_not_by_how_long_the_room_kept_it():
    """In a full room every script's wall time grows; a quick page waiting its turns for the
    interpreter (or for a worker) must not be taken for a costly one."""
    slots = line.Slots(2)
    assert slots.acquire(kind="coalescing")
    threading.Event().wait(0.3)   # waiting, not computing
    slots.release()
    assert slots.expected("coalescing") < line.CHEAP_S


def test_a_page_not_seen_yet_leaves_a_slot_to_the_quick_pages():
    """The first views of a page (its cost unknown) are taken for costly ones: a room opening the
    Benchmarks page first thing held every slot with its cold views."""
    clock, work, order = Clock(), Clock(), []
    slots = line.Slots(2, clock=clock, work_clock=work)
    taught(slots, work, {"coalescing": 0.05})
    gates = [threading.Event() for _ in range(3)]
    script(slots, "benchmarks", order, gates[0])
    until(lambda: order == ["benchmarks"])
    script(slots, "benchmarks", order, gates[1])
    until(lambda: slots.snapshot()["waiting"] == ["benchmarks"])
    script(slots, "coalescing", order, gates[2])
    until(lambda: order == ["benchmarks", "coalescing"])
    for gate in gates:
        gate.set()
    until(lambda: order == ["benchmarks", "coalescing", "benchmarks"])


def test_a_click_numbered_first_goes_first_though_its_request_comes_later():
    """Thirty sessions clicking the export one after another: the page each draws before its request
    reaches the line took longer for one than for the next, and the exports finished out of the
    order clicked. A place taken when the click came (number()) goes before the waiting requests
    numbered after it, never before a running one."""
    lines, order = line.Line(1, budget=lambda: 10 * MB), []
    gates = [threading.Event() for _ in range(4)]
    first, second = lines.number(), lines.number()   # two clicks, in this order

    def request(kind, number, gate, places):
        def run():
            with lines.turn(kind, 0, places.append, poll_s=60, number=number):
                order.append(kind)
                gate.wait(10)
        threading.Thread(target=run, daemon=True).start()
    request("running", None, gates[0], [])
    until(lambda: order == ["running"])
    request("second click", second, gates[1], [])
    queued(lines, 1)
    places = []
    request("first click", first, gates[2], places)
    until(lambda: lines.snapshot()["waiting"] == ["first click", "second click"])
    until(lambda: places and places[-1].place == 1)
    request("unnumbered", None, gates[3], [])
    queued(lines, 3)
    for gate in gates:
        gate.set()
    until(lambda: len(order) == 4)
    assert order == ["running", "first click", "second click", "unnumbered"]


def test_heavy_work_runs_below_the_page_views_priority_and_what_it_starts_too():
    """pages/lib/slots.below_page_views: on two cores an export's Chromium and encoder took the cores
    from every page view; now the work (and a process it starts) runs 10 nice levels lower, on a
    thread that ends with it, in the caller's turn, and its failure is the caller's."""
    import os
    import subprocess
    import sys

    from pages.lib import slots
    here = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    want = min(19, here + slots.HEAVY_NICE)
    with slots.heavy("export", 0):
        seen = slots.below_page_views(lambda: (os.getpriority(os.PRIO_PROCESS, threading.get_native_id()),
                                               getattr(slots._SLOTS, "heavy", False),
                                               subprocess.run([sys.executable, "-c", "import os; print(os.getpriority(0, 0))"],
                                                              capture_output=True, text=True).stdout.strip()))
    assert seen == (want, True, str(want))
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == here   # the page's thread: as it was
    with pytest.raises(ZeroDivisionError):
        slots.below_page_views(lambda: 1 / 0)


def test_costly_scripts_run_one_at_a_time_where_told_leaving_the_other_slots_to_quick_views():
    """pages/lib/slots.py runs costly scripts one per two cores. With all but one slot theirs, thirty
    sessions opening the Benchmarks page ran three at once beside each quick view, which shared the
    interpreter lock with them in turns: quiet views took up to 5.4 s (load_room.py)."""
    clock, work, order = Clock(), Clock(), []
    slots = line.Slots(4, clock=clock, work_clock=work, costly=1)
    taught(slots, work, {"benchmarks": 0.5, "coalescing": 0.05})
    gates = [threading.Event() for _ in range(5)]
    script(slots, "benchmarks", order, gates[0])
    until(lambda: order == ["benchmarks"])
    script(slots, "benchmarks", order, gates[1])
    until(lambda: slots.snapshot()["waiting"] == ["benchmarks"])     # three slots free, none for it
    for gate in gates[2:]:
        script(slots, "coalescing", order, gate)
    until(lambda: order == ["benchmarks"] + ["coalescing"] * 3)
    gates[0].set()
    until(lambda: order[4:] == ["benchmarks"])
    for gate in gates:
        gate.set()
    from pages.lib import slots as page_slots
    assert page_slots.PAGE_SLOTS.costly == max(1, (os.cpu_count() or 1) // 2)


@pytest.mark.parametrize("raw", ["1e400", "1e19GiB", "0", "0.1"])
def test_a_size_setting_out_of_range_is_one_line(monkeypatch, raw):
    """1e400 (a float's inf) failed in int() as an OverflowError traceback on every request."""
    monkeypatch.setenv(line.SERVER_MEMORY_ENV, raw)
    with pytest.raises(EngineError) as exc:
        line.server_memory_limit()
    assert str(exc.value) == (f"{line.SERVER_MEMORY_ENV} must be a size from 1 byte to 1 EiB, like 4GiB or "
                              f"4294967296, got {raw!r}")
