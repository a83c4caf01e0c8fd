"""Issue 20's redraw-speed figures for the Ladder page: seconds from a parameter or size change to the
page's script having finished (AppTest, CPU mode, the server's side of a redraw), with the rung's
build cached and not. Prints its figures; targets: <= 1 s with the build cached, <= 3 s without.

    python3 tests/benchmarks/bench_ladder_redraw.py [--size 4096]

Builds go to a fresh compile cache (a temporary folder), so "build not cached" is a real compile.
"Build cached, counts not" asks for a configuration compiled beforehand and never traced: what a
parameter change costs when another session, an earlier view or the background compiler built it.
Only the rung whose parameters change is traced again; a size change traces every rung's block,
unless its rows and columns sit within 128-byte lines as at a size counted before (engine/metrics/long_k.py:
canonical), so the script also changes M to a size whose residues are new.
"""
import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("MATMUL_EXPLORER_GPU", "0")
os.environ.setdefault("MATMUL_EXPLORER_WARMUP", "0")
os.environ["MATMUL_EXPLORER_CACHE"] = tempfile.mkdtemp(prefix="ladder-redraw-")

from streamlit.testing.v1 import AppTest  # noqa: E402

APP = str(ROOT / "app.py")


def timed(what: str, act) -> float:
    start = time.perf_counter()
    at = act()
    took = time.perf_counter() - start
    assert not at.exception, [e.value for e in at.exception]
    errors = [e.value for e in at.error]
    print(f"  {what:58} {took:6.2f} s" + (f"  (page says: {errors[0]})" if errors else ""))
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--rung", default="warptile")
    size, rung = ap.parse_args().size, ap.parse_args().rung
    from engine.kernels import registry, sass
    from engine.kernels.problem import make_problem
    from engine.tracing import plan, tracer
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params.update({"rung": rung, "m": "512", "n": "512", "k": "512"})
    print(f"Ladder page, CPU mode, {os.cpu_count()} cores; rung {rung}")
    timed("open at 512³ (every rung compiled: not a redraw)", lambda: (at.run(), at.switch_page("pages/ladder.py"),
                                                                       at.run())[-1])
    timed(f"M 512 -> {size} (builds cached)", lambda: at.number_input(key="ladder.m").set_value(size).run())
    timed(f"N 512 -> {size} (builds cached)", lambda: at.number_input(key="ladder.n").set_value(size).run())
    sizes = timed(f"K 512 -> {size}: {size}³ (builds cached)", lambda: at.number_input(key="ladder.k").set_value(size).run())
    # A size whose rows sit differently within 128-byte lines: nothing counted before serves it
    # (long_k.canonical), every rung's block is traced again, from its two short traces.
    fresh = timed(f"M {size} -> {size - 3} (builds cached, counts not)",
                  lambda: at.number_input(key="ladder.m").set_value(size - 3).run())
    timed(f"M {size - 3} -> {size} (counted before)", lambda: at.number_input(key="ladder.m").set_value(size).run())

    def choose(name: str, value: int):
        return lambda: next(s for s in at.selectbox if s.label == name).set_value(value).run()

    def shown(name: str) -> int:
        return int(next(s for s in at.selectbox if s.label == name).value)

    # Build cached, counts not: the configuration compiled beforehand (the CPU library the trace runs
    # and the cubin whose SASS the as-compiled counts read), as another session or view would have.
    bk, tm = shown("BK"), shown("TM")
    tm_to = next(v for v in registry.get(rung).params["TM"] if v != tm)
    problem = registry.bind(registry.get(rung), make_problem(size, size, size, block=registry.get(rung).default_block,
                                                             params={"BK": bk, "TM": tm_to}))
    tracer.compile_for(plan.make_plan(rung, problem, [(0, 0)]), "cpu")
    sass.memory_instructions(registry.get(rung).launches[-1].file, problem.params)
    warm = timed(f"{rung} TM {tm} -> {tm_to} at {size}³ (build cached, counts not)", choose("TM", tm_to))
    bk_to = next(v for v in registry.get(rung).params["BK"] if v != bk)
    uncached = timed(f"{rung} BK {bk} -> {bk_to} at {size}³ (build not cached)", choose("BK", bk_to))
    again = timed(f"{rung} BK {bk_to} -> {bk} at {size}³ (build and counts cached)", choose("BK", bk))
    print(f"size change to {size}³: {sizes:.2f} s, to a size counted nowhere before: {fresh:.2f} s "
          "(target <= 1 s, builds cached); parameter change: "
          f"{warm:.2f} s build cached (target <= 1 s), {uncached:.2f} s not (target <= 3 s), {again:.2f} s all cached")


if __name__ == "__main__":
    main()
