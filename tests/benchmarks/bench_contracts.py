"""What reading the kernels' contracts from their sources costs (no GPU): the catalog's import (every
source's contract block read and checked), binding a request (its rules evaluated), and listing
every accepted choice of the four largest parameter spaces (what warmup.py and tune_ladder.py ask).

    python3 tests/benchmarks/bench_contracts.py
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

WIDEST = ("warptile", "double_buffered", "prefetched", "mma_pipelined")


def main() -> int:
    started = time.perf_counter()
    # A fresh interpreter: the import as the app's first page pays it.
    subprocess.run([sys.executable, "-c", "import engine.kernels.registry"], cwd=ROOT, check=True)
    print(f"import engine.kernels.registry, fresh process: {time.perf_counter() - started:.2f} s")
    from engine.kernels import registry
    from engine.kernels.problem import make_problem
    started = time.perf_counter()
    n = 0
    for name in WIDEST:
        spec = registry.get(name)
        registry.bind(spec, make_problem(4096, 4096, 4096))
        n += 1
    per_bind = (time.perf_counter() - started) / n
    print(f"registry.bind at 4096^3 (first time for the problem): {per_bind * 1e3:.2f} ms a kernel")
    started = time.perf_counter()
    choices = sum(len(registry.get(name).combinations()) for name in WIDEST)
    print(f"combinations() of {', '.join(WIDEST)}: {choices} accepted in {time.perf_counter() - started:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
