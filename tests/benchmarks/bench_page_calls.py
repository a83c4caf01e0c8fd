"""The engine side of each page control change, call by call, cold and warm. Prints its figures.

    python3 tests/benchmarks/bench_page_calls.py            # every scenario
    python3 tests/benchmarks/bench_page_calls.py bank       # scenarios whose name contains 'bank'

Each scenario replays, in order, exactly the engine calls a page script makes for one view
(pages/coalescing.py, pages/tile_phases.py, pages/bank_conflicts.py, through pages/lib/ui.py's
cached_trace = tracer.trace + analysis.warp_instructions, and cached_sass), then the engine/metrics/views.py
call each figure is drawn from. Figures are not drawn.
  cold: a fresh, empty build cache, so every CPU library (g++) and SASS lookup (nvcc + nvdisasm)
        the view needs is compiled on the request, as on a server's first visit to a TILE/PAD variant;
  warm: the builds are there, the trace is not (a view nobody has asked this server for yet).
Run with CPU mode forced (the source is "cpu"), the app's mode on a machine without a GPU.
"""
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.kernels import registry, sass  # noqa: E402
from engine.kernels.problem import make_problem  # noqa: E402
from engine.metrics import analysis, views  # noqa: E402
from engine.tracing import tracer  # noqa: E402

SOURCE = "cpu"


class Timer:
    def __init__(self):
        self.rows: list[tuple[str, float]] = []

    def __call__(self, label, fn, *args, **kwargs):
        start = time.perf_counter()
        out = fn(*args, **kwargs)
        self.rows.append((label, time.perf_counter() - start))
        return out


def cached_trace(tm, kernel, m, n, k, tile, pad, block):
    """pages/lib/ui.py cached_trace: trace, then warp_instructions, on a cache miss."""
    params = registry.get(kernel).takes({"TILE": tile, "PAD": pad})   # as the pages pass them
    p = make_problem(m, n, k, block=block, params=params)
    t = tm(f"tracer.trace {kernel}", tracer.trace, kernel, p, None, SOURCE)
    inst = tm(f"analysis.warp_instructions {kernel}", analysis.warp_instructions, t)
    return t, inst


def coalescing(tm, first, second, m, n, k, block, tile, bx=0, by=0, warp=None, start=0):
    chosen = [first] + ([second] if second else [])
    traced = {name: cached_trace(tm, name, m, n, k, tile, 0, block) for name in chosen}
    t0, inst0 = traced[first]
    warps = tm("views.warps_of", views.warps_of, t0, bx, by)
    warp = warps[0] if warp is None else warp
    tm("views.count_steps", views.count_steps, t0, inst0, bx, by, warp, "global")
    for name in chosen:
        t, inst = traced[name]
        g = t.launches[-1].grid
        tm(f"views.warp_panel {name}", views.warp_panel, t, inst, min(bx, g[0] - 1), min(by, g[1] - 1), warp,
           start, 160)
    summaries = {name: tm(f"analysis.site_summary {name}", analysis.site_summary, *traced[name]) for name in chosen}
    tm("views.global_accesses", views.global_accesses, summaries)


def tile_phases(tm, kernel, m, n, k, tile, bx=None, by=None):
    spec = registry.get(kernel)
    trace, inst = cached_trace(tm, kernel, m, n, k, tile, 0, spec.default_block)
    grid = trace.launches[-1].grid
    bx = grid[0] - 1 if bx is None else bx
    by = grid[1] - 1 if by is None else by
    tm("views.tile_view", views.tile_view, trace, bx, by)
    naive, _ = cached_trace(tm, views.NAIVE_BASELINE.name, m, n, k, tile, 0, views.NAIVE_BASELINE.default_block)
    tm("analysis.global_reads naive", analysis.global_reads, naive)
    tm("analysis.global_reads tiled", analysis.global_reads, trace)


def bank_conflicts(tm, kernel, tile, pad, size, warp=0):
    spec = registry.get(kernel)
    trace, inst = cached_trace(tm, kernel, size, size, size, tile, pad, spec.default_block)
    tm("views.warps_of", views.warps_of, trace, 0, 0)
    tm("views.bank_steps", views.bank_steps, trace, inst, 0, 0, warp, True)
    summary = tm("analysis.site_summary", analysis.site_summary, trace, inst)
    sass_info = tm("sass.memory_instructions", sass.memory_instructions, trace.launches[-1].file,
                   trace.problem.params)
    tm("views.shared_kernel", views.shared_kernel, trace, inst, summary, sass_info)


SCENARIOS = [
    ("coalescing: first load (rows vs cols 32x32x16)", coalescing,
     dict(first="naive_x_rows", second="naive_x_cols", m=32, n=32, k=16, block=(16, 16), tile=16)),
    ("coalescing: M=N=K=128, block 32x32", coalescing,
     dict(first="naive_x_rows", second="naive_x_cols", m=128, n=128, k=128, block=(32, 32), tile=16)),
    ("coalescing: tiled_guarded vs naive_x_cols 128^3, TILE 8", coalescing,
     dict(first="tiled_guarded", second="naive_x_cols", m=128, n=128, k=128, block=(16, 16), tile=8)),
    ("coalescing: naive_transposed_b 128^3, block 32x32", coalescing,
     dict(first="naive_transposed_b", second=None, m=128, n=128, k=128, block=(32, 32), tile=16)),
    ("tile_phases: first load (40^3, TILE 16)", tile_phases, dict(kernel="tiled_guarded", m=40, n=40, k=40, tile=16)),
    ("tile_phases: TILE -> 8 (40^3)", tile_phases, dict(kernel="tiled_guarded", m=40, n=40, k=40, tile=8)),
    ("tile_phases: M -> 128 (128x40x40, TILE 16)", tile_phases, dict(kernel="tiled_guarded", m=128, n=40, k=40, tile=16)),
    ("tile_phases: 128^3 TILE 8", tile_phases, dict(kernel="tiled_guarded", m=128, n=128, k=128, tile=8)),
    ("tile_phases: 128^3 TILE 32, tiled_unguarded", tile_phases,
     dict(kernel="tiled_unguarded", m=128, n=128, k=128, tile=32)),
    ("bank_conflicts: first load (64, TILE 32, PAD 0)", bank_conflicts,
     dict(kernel="shared_bank_conflicts", tile=32, pad=0, size=64)),
    ("bank_conflicts: size 128, TILE 32, PAD 0", bank_conflicts,
     dict(kernel="shared_bank_conflicts", tile=32, pad=0, size=128)),
    ("bank_conflicts: size 128, TILE 32, PAD 1", bank_conflicts,
     dict(kernel="shared_bank_conflicts", tile=32, pad=1, size=128)),
    ("bank_conflicts: size 128, TILE 8, PAD 1", bank_conflicts,
     dict(kernel="shared_bank_conflicts", tile=8, pad=1, size=128)),
    ("bank_conflicts: tiled_guarded 128, TILE 16", bank_conflicts,
     dict(kernel="tiled_guarded", tile=16, pad=0, size=128)),
]


def run(fn, kwargs) -> Timer:
    tm = Timer()
    fn(tm, **kwargs)
    return tm


def main():
    wanted = sys.argv[1:]
    root = tempfile.mkdtemp(prefix="bench-page-calls-")
    totals = []
    print("seconds per engine call; cold = empty build cache (compiles on the request), warm = builds there")
    for i, (name, fn, kwargs) in enumerate(SCENARIOS):
        if wanted and not any(w in name for w in wanted):
            continue
        os.environ["MATMUL_EXPLORER_CACHE"] = os.path.join(root, str(i))
        cold = run(fn, kwargs)
        warm = min((run(fn, kwargs) for _ in range(2)), key=lambda t: sum(s for _, s in t.rows))
        print(f"\n{name}")
        print(f"  {'call':46} {'cold':>7} {'warm':>7}")
        for (label, c), (_, w) in zip(cold.rows, warm.rows):
            print(f"  {label:46} {c:7.3f} {w:7.3f}")
        tc, tw = sum(s for _, s in cold.rows), sum(s for _, s in warm.rows)
        print(f"  {'TOTAL':46} {tc:7.3f} {tw:7.3f}")
        totals.append((name, tc, tw))
    print("\nsummary (engine seconds per control change)")
    for name, tc, tw in totals:
        print(f"  {name:58} cold {tc:6.2f}  warm {tw:6.2f}")


if __name__ == "__main__":
    main()
