"""Issue 20's redraw-speed figures for the Ladder page: seconds from a parameter or size change to the
page's script having finished (AppTest, CPU mode, the server's side of a redraw), with the rung's
build cached and not. Prints its figures; targets: <= 1 s with the build cached, <= 3 s without.

    python3 tests/benchmarks/bench_ladder_redraw.py [--size 4096]

Builds go to a fresh compile cache (a temporary folder), so "build not cached" is a real compile.
"Build cached, counts not" clears the page's result cache (pages/lib/cached.py RESULTS) and asks for
a configuration compiled before: what a parameter change costs when another session, or an earlier
view, has compiled it.
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
    from pages.lib import cached
    at = AppTest.from_file(APP, default_timeout=600)
    at.query_params.update({"rung": rung, "m": "512", "n": "512", "k": "512"})
    print(f"Ladder page, CPU mode, {os.cpu_count()} cores; rung {rung}")
    timed("open at 512³ (every rung compiled: not a redraw)", lambda: (at.run(), at.switch_page("pages/ladder.py"),
                                                                       at.run())[-1])
    timed(f"M 512 -> {size} (builds cached)", lambda: at.number_input(key="ladder.m").set_value(size).run())
    timed(f"N 512 -> {size} (builds cached)", lambda: at.number_input(key="ladder.n").set_value(size).run())
    sizes = timed(f"K 512 -> {size}: {size}³ (builds cached)", lambda: at.number_input(key="ladder.k").set_value(size).run())
    bk = next(s for s in at.selectbox if s.label == "BK")
    other = [v for v in bk.options if str(v) != str(bk.value)]
    first, second = int(other[0]), int(other[-1])
    uncached = timed(f"{rung} BK {bk.value} -> {first} at {size}³ (build not cached)",
                     lambda: next(s for s in at.selectbox if s.label == "BK").set_value(first).run())
    timed(f"{rung} BK {first} -> {second} at {size}³ (build not cached)",
          lambda: next(s for s in at.selectbox if s.label == "BK").set_value(second).run())
    cached.RESULTS.clear()
    warm = timed(f"{rung} BK {second} -> {first} at {size}³ (build cached, counts not)",
                 lambda: next(s for s in at.selectbox if s.label == "BK").set_value(first).run())
    again = timed(f"{rung} BK {first} -> {second} at {size}³ (build and counts cached)",
                  lambda: next(s for s in at.selectbox if s.label == "BK").set_value(second).run())
    print(f"size change to {size}³: {sizes:.2f} s (target <= 1 s, builds cached); parameter change: "
          f"{warm:.2f} s build cached (target <= 1 s), {uncached:.2f} s not (target <= 3 s), {again:.2f} s all cached")


if __name__ == "__main__":
    main()
