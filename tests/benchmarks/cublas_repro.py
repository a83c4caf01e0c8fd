"""Why cuBLAS TF32 at 1024^3 measured 105 TFLOP/s in one run of the harness and ~150 in others:
times it through the benchmark harness under the conditions that differ between runs (an idle GPU
before the point, a warm one, the size timed before it, L2 flushed or not) and prints GFLOP/s with
the SM clock NVML reported after each point.

    python3 tests/benchmarks/cublas_repro.py
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark  # noqa: E402


def smi_clock() -> str:
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,clocks_event_reasons.active", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    except OSError:
        return "?"


def point(label: str, kernel: str, n: int, settings: benchmark.Settings, params=None) -> float:
    before = smi_clock()
    row = benchmark.measure(kernel, n, n, n, settings, params)
    g = row.get("gflops", float("nan"))
    print(f"{label:44} {kernel:18} {n:>5} {g:>10,.0f} GFLOP/s  spread {100 * row.get('spread', 0):4.1f}%  "
          f"clock before [{before}] after {row.get('sm_clock_mhz', '?')} MHz  launches/sample "
          f"{row.get('launches_per_sample')}", flush=True)
    return g


def main() -> int:
    plain = benchmark.Settings()
    flushed = benchmark.Settings(flush_l2=True)
    point("first point of the process", "cublas_sgemm_tf32", 1024, plain)
    for i in range(3):
        time.sleep(8)   # the GPU drops its clocks when idle
        point(f"after 8 s idle ({i})", "cublas_sgemm_tf32", 1024, plain)
        point("  right after, again", "cublas_sgemm_tf32", 1024, plain)
        point("  with L2 flushed before each sample", "cublas_sgemm_tf32", 1024, flushed)
    point("after a 4096 point", "cublas_sgemm", 4096, plain)
    point("  then 1024", "cublas_sgemm_tf32", 1024, plain)
    for n in (1024, 2048, 4096):
        for rep in range(3):
            point(f"repeat {rep}", "cublas_sgemm", n, plain)
            point(f"repeat {rep}", "cublas_sgemm_tf32", n, plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
