"""A full classroom against one app server (issue 8's targets). Prints its figures.

    python3 tests/benchmarks/load_server.py [--quick]

Each session is a Streamlit client speaking the browser's own protocol over the websocket (a
"rerun" with the page and its URL parameters, then the server's messages): what the server does
for a browser, without a browser's rendering competing for this machine's two cores. A session's
time is from its connection to the message that carries its first chart. Meanwhile a probe asks
/_stcore/health every 200 ms.

Targets, CPU mode on a 2-core machine: 30 sessions opening the same default view at once all see
their figure within 5 s; 24 sessions with 24 different views, p95 within 10 s; /_stcore/health
within 1 s throughout; server RSS <= 2 GB after 100 distinct max-size views.
"""
from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests import server  # noqa: E402
from tests.server import free_port  # noqa: E402


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def children(pid: int) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


async def session(port: int, page: str, query: str, timeout: float = 180) -> tuple[float, str]:
    """Seconds until the page's first chart arrives, and what went wrong if it did not."""
    return await server._session(port, page, query, timeout)


async def probe(port: int, stop: asyncio.Event, worst: list[float]) -> None:
    loop = asyncio.get_running_loop()

    def ask() -> float:
        t = time.perf_counter()
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=30).read()
        except OSError:
            return 30.0
        return time.perf_counter() - t

    while not stop.is_set():
        worst.append(await loop.run_in_executor(None, ask))
        await asyncio.sleep(0.2)


async def crowd(port: int, views: list[tuple[str, str]], concurrency: int | None = None):
    stop, health = asyncio.Event(), []
    prober = asyncio.create_task(probe(port, stop, health))
    limit = asyncio.Semaphore(concurrency or len(views))

    async def one(view):
        async with limit:
            try:
                return await session(port, *view)
            except Exception as exc:  # noqa: BLE001 - a failed session is a figure to report
                return float("nan"), f"{type(exc).__name__}: {exc}"

    results = await asyncio.gather(*(one(v) for v in views))
    stop.set()
    await prober
    return results, health


def report(name: str, results, health, target: str) -> None:
    times = sorted(t for t, problem in results if not problem)
    problems = [p for _, p in results if p]
    p95 = times[max(0, int(round(0.95 * len(times))) - 1)] if times else float("nan")
    print(f"{name}: {len(times)}/{len(results)} saw their figure; median {statistics.median(times):.2f} s, "
          f"p95 {p95:.2f} s, max {max(times):.2f} s ({target}); /_stcore/health worst {max(health):.2f} s "
          f"over {len(health)} probes (target <= 1 s)" if times else f"{name}: no session saw a figure")
    for p in sorted(set(problems))[:5]:
        print(f"    {problems.count(p)} x {p}")


def start_server(port: int) -> subprocess.Popen:
    env = {"MATMUL_EXPLORER_WARMUP": "0", "MATMUL_EXPLORER_GPU": "0",
           **dict(kv.split("=", 1) for kv in os.environ.get("LOAD_SERVER_ENV", "").split() if "=" in kv)}
    return server.start(port, env)


def distinct_views() -> list[tuple[str, str]]:
    """24 different views, over the three animated pages."""
    views = []
    for m, n, k in [(32, 32, 16), (40, 48, 24), (64, 64, 32), (96, 64, 48), (128, 96, 64), (72, 80, 40),
                    (56, 120, 32), (128, 128, 128)]:
        views.append(("coalescing", f"m={m}&n={n}&k={k}"))
    for m, n, k, tile in [(40, 40, 40, 8), (64, 64, 64, 16), (96, 80, 72, 16), (128, 128, 128, 32), (50, 70, 90, 8),
                          (128, 64, 96, 16), (33, 47, 61, 8), (120, 120, 120, 32)]:
        views.append(("tile_phases", f"m={m}&n={n}&k={k}&TILE={tile}"))
    for size, tile, pad in [(64, 16, 0), (64, 16, 1), (128, 32, 0), (128, 32, 1), (96, 32, 0), (128, 16, 1),
                            (32, 8, 0), (64, 8, 1)]:
        views.append(("bank_conflicts", f"m={size}&n={size}&k={size}&TILE={tile}&PAD={pad}"))
    return views


def max_size_views(count: int) -> list[tuple[str, str]]:
    """Distinct views at the pages' largest size (128): other kernels, tiles, padding, blocks and warps."""
    views = [("bank_conflicts", f"m=128&n=128&k=128&TILE={tile}&PAD={pad}&warp={warp}")
             for tile in (8, 16, 32) for pad in (0, 1) for warp in (0, 1)]
    for tile in (8, 16, 32):
        g = 128 // tile
        views += [("tile_phases", f"m=128&n=128&k=128&TILE={tile}&bx={i % g}&by={i // g % g}") for i in range(16)]
    for block in ("32x32", "16x16", "32x8"):
        for first in ("naive_x_rows", "naive_x_cols"):
            views += [("coalescing", f"m=128&n=128&k=128&block={block}&kernel={first}&bx={i % 4}&by={i // 4}")
                      for i in range(8)]
    assert len(set(views)) == len(views) >= count
    return views[:count]


def main() -> None:
    quick = "--quick" in sys.argv
    port = free_port()
    proc = start_server(port)
    try:
        print(f"--- app server pid {proc.pid}, CPU mode, {os.cpu_count()} cores; server RSS at start "
              f"{rss_mb(proc.pid):.0f} MB")
        if "--memory-only" in sys.argv:
            results, health = asyncio.run(crowd(port, max_size_views(20 if quick else 100), concurrency=4))
            report("max-size views", results, health, "no target")
            print(f"server RSS after them: {rss_mb(proc.pid):.0f} MB")
            return
        n = 10 if quick else 30
        results, health = asyncio.run(crowd(port, [("coalescing", "")] * n))
        report(f"{n} sessions, the same default view (Coalescing) at once, cold server", results, health,
               "target: all within 5 s")
        views = distinct_views()[: 8 if quick else 24]
        results, health = asyncio.run(crowd(port, views))
        report(f"{len(views)} sessions, {len(views)} different views at once", results, health,
               "target: p95 within 10 s")
        count = 20 if quick else 100
        big = max_size_views(count)
        start = time.perf_counter()
        results, health = asyncio.run(crowd(port, big, concurrency=4))
        workers = sum(rss_mb(c) for c in children(proc.pid))
        report(f"{len(big)} distinct max-size views, 4 sessions at a time ({time.perf_counter() - start:.0f} s)",
               results, health, "no target")
        print(f"server RSS after them: {rss_mb(proc.pid):.0f} MB (target <= 2048 MB); its worker processes "
              f"together {workers:.0f} MB")
    finally:
        proc.terminate()
        proc.wait(timeout=30)


if __name__ == "__main__":
    main()
