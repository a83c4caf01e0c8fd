"""A room that keeps moving: heavy work beside page views, one server (CPU mode). Prints its figures.

    python3 tests/benchmarks/load_room.py [--quick] [--pause S] [--ladders-only | --fresh-only]

Each session speaks the browser's websocket protocol (tests/server.py). An exporting session opens
the Benchmarks page, selects a recorded run of its own (each exporter has a different one, so that
no two exports are the same and shared: their order is then the line's); once every exporter has
its run on screen they click "Make PNG, SVG and HTML files" (a rerun carrying the button's trigger)
one after another, 0.5 s apart; each waits for its script to finish and notes whether its place in
line was shown. Browsing sessions open the quiet pages' views, each in a new session, reading each
for a second (--pause) before the next. The runs are copies
of the shipped run, each with a date of its own, in a folder of their own (MATMUL_EXPLORER_RECORDED).

Targets, CPU mode on a 2-core machine: 30 sessions each clicking the export while 10 others browse
the quiet pages, every ordinary page view within 1 s, the exports done in the order they came with
their place shown; 10 Ladder sessions at 4096^3 each within 10 s; server + workers RSS <= 2 GB
(MATMUL_EXPLORER_SERVER_MEMORY=2GiB), sampled every 0.25 s from start to end; /_stcore/health
within 1 s throughout; then a second server on an empty compile cache (background compiles on):
30 sessions opening the same view, each within 5 s to its first chart.

Both cores are busy for its length (about 10 minutes; --quick about 2).
"""
from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.bench import benchmark  # noqa: E402
from engine.devices import host_memory  # noqa: E402
from tests import server  # noqa: E402
from tests.benchmarks import load_server  # noqa: E402
from tests.server import free_port  # noqa: E402


async def _run(ws, page: str, query: str, widgets=None, timeout: float = 600) -> dict:
    """One rerun: its messages until the script finishes (a run that ends early to rerun is waited
    past). What it saw: the buttons by label, whether a place in line was shown, problems."""
    from streamlit.proto.BackMsg_pb2 import BackMsg
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
    msg = BackMsg()
    msg.rerun_script.query_string = query
    msg.rerun_script.page_name = page
    for wid, value in (widgets or {}).items():
        state = msg.rerun_script.widget_states.widgets.add()
        state.id = wid
        if value is True:
            state.trigger_value = True
        else:   # a multiselect's options
            state.string_array_value.data[:] = value
    await ws.send(msg.SerializeToString())
    seen = {"buttons": {}, "selects": {}, "in_line": False, "problem": ""}
    end = time.perf_counter() + timeout
    while True:
        fwd = ForwardMsg()
        fwd.ParseFromString(await asyncio.wait_for(ws.recv(), end - time.perf_counter()))
        kind = fwd.WhichOneof("type")
        if kind == "delta" and fwd.delta.WhichOneof("type") == "new_element":
            el = fwd.delta.new_element
            what = el.WhichOneof("type")
            if what == "button":
                seen["buttons"][el.button.label] = el.button.id
            if what == "multiselect":
                seen["selects"][el.multiselect.label] = el.multiselect.id
            # its place in line, or that another session's identical export is being made for it
            if what == "alert" and (" in line, about " in el.alert.body or "another session" in el.alert.body):
                seen["in_line"] = True
            if what == "exception" or (what == "alert" and el.alert.format == 1):
                seen["problem"] = (el.exception.message if what == "exception" else el.alert.body)[:100]
        if kind == "script_finished" and fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            return seen


async def exporter(port: int, run: str, ready, turn: asyncio.Event, next_turn: asyncio.Event,
                   done: list) -> tuple[float, str]:
    """Opens Benchmarks and selects its run, then says it is ready (ready()); once `turn` is set it
    clicks the export, and sets `next_turn` a moment later. Seconds from the click to its files,
    noted in `done` as (clicked, finished, place shown)."""
    import websockets
    try:
        async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                                      max_size=None, open_timeout=600) as ws:
            first = await _run(ws, "benchmarks", "")
            select = first["selects"].get("Recorded on a GPU")
            if select is None:
                return float("nan"), first["problem"] or "no run to select"
            chosen = {select: [run]}
            shown = await _run(ws, "benchmarks", "", chosen)
            button = next((i for label, i in shown["buttons"].items() if label.startswith("Make PNG")), None)
            if button is None:
                return float("nan"), shown["problem"] or "no export button"
            ready()
            await turn.wait()
            clicked = time.perf_counter()
            asyncio.get_running_loop().call_later(CLICK_GAP_S, next_turn.set)
            after = await _run(ws, "benchmarks", "", {**chosen, button: True})
            done.append((clicked, time.perf_counter(), after["in_line"]))
            if os.environ.get("LOAD_ROOM_VERBOSE"):
                print(f"    export of {run}: clicked at {clicked - STARTED[0]:.1f} s, files at {time.perf_counter() - STARTED[0]:.1f} s")
            return time.perf_counter() - clicked, after["problem"]
    finally:
        ready()   # a session that failed does not hold up the others (a second call does nothing)
        next_turn.set()


async def browser(port: int, stop: asyncio.Event, views: list[tuple[str, str]], times: list, pause: float) -> None:
    """Opens quiet page views one after another, each in a new session, `pause` seconds apart (a
    student reading the page), until told to stop."""
    i = 0
    while not stop.is_set():
        began = time.perf_counter()
        t, problem = await load_server.session(port, *views[i % len(views)], timeout=600)
        times.append((t, problem, began, views[i % len(views)][0]))
        i += 1
        await asyncio.sleep(pause)


STARTED = [0.0]   # when the room began (for LOAD_ROOM_VERBOSE=1's times)
# Seconds a browsing session reads a page before opening the next (--pause S): with none, ten
# sessions asking back to back are ten times the views a second of a room's students, and measure
# how many views a second one interpreter serves rather than whether heavy work holds them up.
PAUSE_S = 1.0
# Seconds between one exporter's click and the next one's: the clicks come in a known order.
CLICK_GAP_S = 0.5


async def room(port: int, runs: list[str], browsers: int, pause: float):
    """The exporters open their pages all at once; when every one has its run on screen, the first
    clicks, and each of the others CLICK_GAP_S after the one before."""
    stop, health, views, done = asyncio.Event(), [], [], []
    prober = asyncio.create_task(load_server.probe(port, stop, health))
    quiet = [("coalescing", ""), ("tile_phases", ""), ("bank_conflicts", "")]
    walkers = [asyncio.create_task(browser(port, stop, quiet[i % 3:] + quiet[:i % 3], views, pause))
               for i in range(browsers)]
    turns = [asyncio.Event() for _ in range(len(runs) + 1)]
    waiting = set(range(len(runs)))

    def ready(i: int) -> None:
        waiting.discard(i)
        if not waiting and not turns[0].is_set():
            turns[0].set()
            STARTED.append(time.perf_counter())
            print(f"    every exporter has its run on screen at {time.perf_counter() - STARTED[0]:.1f} s: the clicks begin")
    results = await asyncio.gather(*(exporter(port, run, lambda i=i: ready(i), turns[i], turns[i + 1], done)
                                     for i, run in enumerate(runs)))
    stop.set()
    await asyncio.gather(*walkers, prober)
    return results, views, health, done


def recorded_runs(folder: Path, count: int) -> list[str]:
    """`count` runs for the exporters in `folder` (the shipped recorded folder's contents linked in
    beside them): the shipped run, each copy with a date of its own."""
    for item in benchmark.RECORDED.iterdir():
        (folder / item.name).symlink_to(item)
    doc = json.loads(benchmark.opening_runs(benchmark.recorded_runs())[0].read_text())
    names = []
    for i in range(count):
        doc["provenance"]["date"] = f"2026-01-{1 + i // 24:02d}T{i % 24:02d}:00:00+00:00"
        names.append(f"room-{i:02d}.json")
        (folder / names[-1]).write_text(json.dumps(doc))
    return names


def pss(pid: int) -> int:
    """Proportional set size: pages shared between processes (the browser's several processes share
    most of theirs) counted once over them all, where RSS counts them in each."""
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
        if line.startswith("Pss:"):
            return int(line.split()[1]) * 1024
    return 0


class MemoryWatch:
    """Server + workers RSS (tree_rss: the kaleido browser included) every `every` seconds, in a
    thread, for as long as it is on: the peak, and when it was; and the peak of their PSS."""

    def __init__(self, pid: int, every: float = 0.25):
        self.pid, self.every, self.peak, self.when, self.samples, self.parts = pid, every, 0, "", 0, {}
        self.peak_pss = 0
        self.phase, self._stop = "start", threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.wait(self.every):
            parts, proportional = {}, 0
            for pid in [self.pid, *server.descendants(self.pid)]:
                try:
                    parts[pid] = int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
                    proportional += pss(pid)
                except (OSError, IndexError, ValueError):
                    continue
            self.samples += 1
            self.peak_pss = max(self.peak_pss, proportional)
            if sum(parts.values()) > self.peak:   # what held it, named while the processes are there
                self.peak, self.when = sum(parts.values()), self.phase
                self.parts = {pid: (Path(server.command(pid).split(" ")[0]).name or "?", rss) for pid, rss in parts.items()}

    def stop(self) -> str:
        """The peak, and what held it: the server process, and the others by their program."""
        self._stop.set()
        self._thread.join()
        others: dict[str, int] = {}
        for pid, (name, rss) in self.parts.items():
            if pid != self.pid:
                others[name] = others.get(name, 0) + rss
        held = ", ".join(f"{name} {rss / 2**20:.0f}" for name, rss in sorted(others.items(), key=lambda kv: -kv[1]))
        return (f"server + workers RSS peak {self.peak / 2**20:.0f} MB (during {self.when}: the server "
                f"{self.parts.get(self.pid, ('', 0))[1] / 2**20:.0f} MB; {held or 'nothing else'}) over {self.samples} samples "
                f"every {self.every} s (target <= 2048 MB throughout); PSS peak {self.peak_pss / 2**20:.0f} MB")


def fresh_cache(sessions: int) -> None:
    """A second server on an empty compile cache, background compiles on: `sessions` at once."""
    with tempfile.TemporaryDirectory() as cache:
        port = free_port()
        proc = server.start(port, {"MATMUL_EXPLORER_WARMUP": "1", "MATMUL_EXPLORER_GPU": "0",
                                               "MATMUL_EXPLORER_CACHE": cache})
        try:
            results, health = asyncio.run(load_server.crowd(port, [("coalescing", "")] * sessions))
            load_server.report(f"{sessions} sessions at once on a fresh compile cache (Coalescing)", results, health,
                               "target: each within 5 s")
        finally:
            proc.terminate()
            proc.wait(timeout=30)


def exports(port, runs, browsers: int, pause: float, exporters: int, proc, watch) -> None:
    """The exporters clicking, the browsers viewing meanwhile: their figures printed."""
    watch.phase = "the exports"
    start = STARTED[0] = time.perf_counter()
    results, views, health, done = asyncio.run(room(port, runs, browsers, pause))
    load_server.report(f"{exporters} sessions clicking the export, each its own run, {CLICK_GAP_S} s apart "
                       f"({time.perf_counter() - start:.0f} s)", results, health, "from the click to the files")
    in_order = [c for c, _, _ in sorted(done, key=lambda d: d[1])] == sorted(c for c, _, _ in done)
    print(f"    exports finished in the order clicked: {in_order}; place in line shown to "
          f"{sum(s for _, _, s in done)} of {len(done)} (target: all but the first)")
    load_server.report(f"{len(views)} ordinary page views by {browsers} sessions meanwhile, {pause} s apart", [v[:2] for v in views], health,
                       "target: every one within 1 s")
    slow = [f"{page} {t:.1f} s at {began - start:.0f} s" for t, p, began, page in views if not p and t > 1]
    clicks = STARTED[1] if len(STARTED) > 1 else float("inf")
    opening = sum(t > 1 for t, p, began, _ in views if not p and began < clicks)
    print(f"    page views over 1 s: {len(slow)}, {opening} of them while the exporters opened their pages (before "
          f"{clicks - start:.0f} s)" + (f" ({', '.join(slow[:12])}{', ...' if len(slow) > 12 else ''})" if slow else ""))
    rss = host_memory.tree_rss(proc.pid) / 2**20
    print(f"server + workers RSS after the exports: {rss:.0f} MB (target <= 2048 MB)")


def main() -> None:
    quick = "--quick" in sys.argv
    if "--fresh-only" in sys.argv:      # the fresh-cache phase alone
        fresh_cache(10 if quick else 30)
        return
    exporters, browsers, ladders = (6, 3, 3) if quick else (30, 10, 10)
    pause = float(sys.argv[sys.argv.index("--pause") + 1]) if "--pause" in sys.argv else PAUSE_S
    folder = tempfile.TemporaryDirectory()
    runs = recorded_runs(Path(folder.name), exporters)
    os.environ["LOAD_SERVER_ENV"] = f"{os.environ.get('LOAD_SERVER_ENV', '')} MATMUL_EXPLORER_RECORDED={folder.name}"
    port = free_port()
    proc = load_server.start_server(port)
    watch = MemoryWatch(proc.pid)
    try:
        print(f"--- app server pid {proc.pid}, CPU mode, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} "
              f"before it (other work on this machine); server + workers RSS at start {host_memory.tree_rss(proc.pid) / 2**20:.0f} MB")
        # The quiet pages' default views first, as a room that has been open a while has them.
        asyncio.run(load_server.crowd(port, [("coalescing", ""), ("tile_phases", ""), ("bank_conflicts", "")]))
        if "--ladders-only" not in sys.argv:
            exports(port, runs, browsers, pause, exporters, proc, watch)
        watch.phase = "the Ladder sessions"
        start = time.perf_counter()
        results, health = asyncio.run(load_server.crowd(port, [("ladder", "m=4096&n=4096&k=4096")] * ladders))
        load_server.report(f"{ladders} Ladder sessions at 4096³ ({time.perf_counter() - start:.0f} s)", results, health,
                           "target: each within 10 s")
        print(f"server + workers RSS after them: {host_memory.tree_rss(proc.pid) / 2**20:.0f} MB (target <= 2048 MB)")
    finally:
        print(watch.stop())
        proc.terminate()
        proc.wait(timeout=30)
        folder.cleanup()
    if "--ladders-only" not in sys.argv:
        fresh_cache(10 if quick else 30)
    print(f"--- load average over the last 5 and 15 minutes: {os.getloadavg()[1]:.1f}, {os.getloadavg()[2]:.1f} "
          f"(this benchmark alone keeps it near 2 or above: more is other work on this machine)")


if __name__ == "__main__":
    main()
