"""How long the as-compiled counts of one block take, and what the Nsight Compute view adds.

    python3 tests/benchmarks/bench_as_compiled.py [SIZE]      (CPU; default 4096)

For each traced rung at SIZE³: the one-block trace (CPU), then its counts as compiled (warp
instructions, the Ladder's RungCounts with nvcc's merges, Nsight Compute's totals with the
never-executing loads) from a SASS listing already made, then the side-by-side table against the
shipped reference (what the page's view adds to a redraw once the counts are there). Last, for the
ladder's rungs, what the Ladder page runs: trace and counts together from two short traces
(engine/metrics/long_k.py), the same numbers.
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.kernels import registry, sass  # noqa: E402
from engine.kernels.problem import make_problem  # noqa: E402
from engine.metrics import analysis, long_k, ncu_reference, rung_counts  # noqa: E402
from engine.tracing import tracer  # noqa: E402


def main(size: int) -> None:
    print(f"{'rung':16} {'trace s':>8} {'counts s':>9} {'view s':>7} {'long_k s':>9}  verdicts")
    worst = slowest = 0.0
    for rung in [*registry.LADDER_RUNGS, *[r for r in registry.TENSOR_RUNGS if registry.get(r).kind is registry.Kind.CUDA]]:
        spec = registry.get(rung)
        p = make_problem(size, size, size, block=spec.default_block)
        listing = sass.memory_instructions(spec.launches[-1].file, registry.bind(spec, p).params)
        t0 = time.perf_counter()
        t = tracer.trace(rung, p, [(1, 1)], "cpu")
        t1 = time.perf_counter()
        inst = analysis.warp_instructions(t)
        loads = "" if rung in registry.TENSOR_RUNGS else \
            f" ({rung_counts.rung_counts(t, inst, (1, 1), listing).shared_requests:,} shared loads)"
        totals, _ = analysis.compiled_totals(t, analysis.site_summary(t, inst), listing)
        t2 = time.perf_counter()
        gx, gy = t.launches[-1].grid
        view = ncu_reference.side_by_side(rung, (size,) * 3, t.problem.params, spec.default_block, totals, gx * gy)
        t3 = time.perf_counter()
        worst = max(worst, t2 - t1)
        verdicts = "not measured" if view.table is None else ", ".join(
            f"{v} {n}" for v, n in view.table["agree"].value_counts().items())
        both = ""
        if rung in registry.LADDER_RUNGS:
            long_k.block_counts(rung, t.problem, (1, 1), "cpu", lambda *_, known=listing: known)   # learns the barriers per tile
            t4 = time.perf_counter()
            long_k.block_counts(rung, t.problem, (1, 1), "cpu", lambda *_, known=listing: known)
            slowest = max(slowest, time.perf_counter() - t4)
            both = f"{time.perf_counter() - t4:9.2f}"
        print(f"{rung:16} {t1 - t0:8.2f} {t2 - t1:9.2f} {t3 - t2:7.3f} {both:>9}  {verdicts}{loads}")
    print(f"slowest counts of one block after its trace: {worst:.2f} s (target 1 s); "
          f"slowest trace and counts of a ladder rung's block from two short traces: {slowest:.2f} s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 4096)
