"""How long a 60-frame coalescing animation takes to export as GIF, as MP4 and as the HTML player, at
1280x720 (engine/plots/movie.py: Chromium started, every frame stepped and captured, encoded). Target:
GIF and MP4 in <= 10 s each on a 2-core machine. Prints its figures.

    python3 tests/benchmarks/export_animation.py [--repeat N]

The figure is the Coalescing page's default pair (naive_x_rows beside naive_x_cols, block 32x32) at
32x32x30 from instruction 2: 60 frames. Its trace and figure are made once, before the clock starts
(the page has them already when its export button is pressed). The machine's load average is printed
with each run: other work on the cores slows Chromium down.
"""
import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine import animations  # noqa: E402
from engine.plots import movie  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()
    fig, title = animations.coalescing(k=30, start=2, source="cpu")
    frames = len(movie.frame_names(fig))
    print(f"{title}: {frames} frames at {movie.frame_ms(fig)} ms, {movie.SCREEN[0]}x{movie.SCREEN[1]}, "
          f"{os.cpu_count()} cores")
    fig.freeze()
    for fmt in ("gif", "mp4", "html"):
        for _ in range(args.repeat):
            load = os.getloadavg()[0]
            started = time.perf_counter()
            data = movie.export(fig, fmt, title)
            took = time.perf_counter() - started
            verdict = "" if fmt == "html" else ("  (target <= 10 s: met)" if took <= 10 else "  (target <= 10 s: MISSED)")
            print(f"  {fmt:4}  {took:5.1f} s  {len(data) / 2**20:5.1f} MB  load average {load:.1f}{verdict}")


if __name__ == "__main__":
    main()
