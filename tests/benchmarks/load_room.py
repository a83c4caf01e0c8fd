"""A room that keeps moving: heavy work beside page views, one server (CPU mode). Prints its figures.

    python3 tests/benchmarks/load_room.py [--quick]

Each session speaks the browser's websocket protocol (tests/server.py). An exporting session opens
the Benchmarks page, then clicks "Make PNG, SVG and HTML files" (a rerun carrying the button's
trigger) and waits for the script to finish; it notes whether its place in line was shown.

Targets, CPU mode on a 2-core machine: 30 sessions each clicking the export while 10 others browse
the quiet pages, every ordinary page view within 1 s, the exports done in the order they came with
their place shown; 10 Ladder sessions at 4096^3 each within 10 s; server + workers RSS <= 2 GB
(MATMUL_EXPLORER_SERVER_MEMORY=2GiB); /_stcore/health within 1 s throughout.
"""
from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from engine.devices import host_memory  # noqa: E402
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
    for wid in widgets or []:
        state = msg.rerun_script.widget_states.widgets.add()
        state.id, state.trigger_value = wid, True
    await ws.send(msg.SerializeToString())
    seen = {"buttons": {}, "in_line": False, "problem": ""}
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
            # its place in line, or that another session's identical export is being made for it
            if what == "alert" and (" in line, about " in el.alert.body or "another session" in el.alert.body):
                seen["in_line"] = True
            if what == "exception" or (what == "alert" and el.alert.format == 1):
                seen["problem"] = (el.exception.message if what == "exception" else el.alert.body)[:100]
        if kind == "script_finished" and fwd.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
            return seen


async def exporter(port: int, done: list) -> tuple[float, str]:
    """Opens Benchmarks, clicks the export; seconds from the click to its files, and the order it
    clicked in is noted in `done` as (clicked, finished, place shown)."""
    import websockets
    async with websockets.connect(f"ws://127.0.0.1:{port}/_stcore/stream", subprotocols=["streamlit"],
                                  max_size=None, open_timeout=600) as ws:
        first = await _run(ws, "benchmarks", "")
        button = next((i for label, i in first["buttons"].items() if label.startswith("Make PNG")), None)
        if button is None:
            return float("nan"), first["problem"] or "no export button"
        clicked = time.perf_counter()
        after = await _run(ws, "benchmarks", "", [button])
        done.append((clicked, time.perf_counter(), after["in_line"]))
        return time.perf_counter() - clicked, after["problem"]


async def browser(port: int, stop: asyncio.Event, views: list[tuple[str, str]], times: list) -> None:
    """Opens quiet page views one after another, each in a new session, until told to stop."""
    i = 0
    while not stop.is_set():
        t, problem = await load_server.session(port, *views[i % len(views)], timeout=600)
        times.append((t, problem))
        i += 1


async def room(port: int, exporters: int, browsers: int):
    stop, health, views, done = asyncio.Event(), [], [], []
    prober = asyncio.create_task(load_server.probe(port, stop, health))
    quiet = [("coalescing", ""), ("tile_phases", ""), ("bank_conflicts", "")]
    walkers = [asyncio.create_task(browser(port, stop, quiet[i % 3:] + quiet[:i % 3], views)) for i in range(browsers)]
    results = await asyncio.gather(*(exporter(port, done) for _ in range(exporters)))
    stop.set()
    await asyncio.gather(*walkers, prober)
    return results, views, health, done


def main() -> None:
    quick = "--quick" in sys.argv
    exporters, browsers, ladders = (6, 3, 3) if quick else (30, 10, 10)
    port = free_port()
    proc = load_server.start_server(port)
    try:
        print(f"--- app server pid {proc.pid}, CPU mode; server + workers RSS at start "
              f"{host_memory.tree_rss(proc.pid) / 2**20:.0f} MB")
        # The quiet pages' default views first, as a room that has been open a while has them.
        asyncio.run(load_server.crowd(port, [("coalescing", ""), ("tile_phases", ""), ("bank_conflicts", "")]))
        start = time.perf_counter()
        results, views, health, done = asyncio.run(room(port, exporters, browsers))
        load_server.report(f"{exporters} sessions clicking the export ({time.perf_counter() - start:.0f} s)", results,
                           health, "no target of their own")
        in_order = [c for c, _, _ in sorted(done, key=lambda d: d[1])] == sorted(c for c, _, _ in done)
        print(f"    exports finished in the order clicked: {in_order}; place in line (or the shared export) shown to "
              f"{sum(s for _, _, s in done)} of {len(done)}")
        load_server.report(f"{len(views)} ordinary page views by {browsers} sessions meanwhile", views, health,
                           "target: every one within 1 s")
        print(f"    page views over 1 s: {sum(t > 1 for t, p in views if not p)}")
        rss = host_memory.tree_rss(proc.pid) / 2**20
        print(f"server + workers RSS after the exports: {rss:.0f} MB (target <= 2048 MB)")
        start = time.perf_counter()
        results, health = asyncio.run(load_server.crowd(port, [("ladder", "size=4096")] * ladders))
        load_server.report(f"{ladders} Ladder sessions at 4096³ ({time.perf_counter() - start:.0f} s)", results, health,
                           "target: each within 10 s")
        print(f"server + workers RSS after them: {host_memory.tree_rss(proc.pid) / 2**20:.0f} MB (target <= 2048 MB)")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
