"""Nsight Compute's kernel durations for the wgmma rungs and cuBLAS FP16 (run on the device, with
`ncu`): confirms the TFLOP/s that the engine's CUDA-event timing gives (tests/benchmarks/wgmma_beyond.py).

    python3 tests/benchmarks/ncu_wgmma.py [--sizes 4096,8192] [--kernels a,b] [--regex R]
                                          [--params CLUSTER=4,SUSPEND=1] [--metrics m1,m2]

runs, for each size, itself under

    ncu --clock-control none -k regex:"wgmma_|nvjet|sm90_xmma" --metrics gpu__time_duration.sum --csv \
        python3 tests/benchmarks/ncu_wgmma.py --launch SIZE --kernels ...

(3 launches of each rung, 3 cuBLAS FP16 products) and prints each kernel's median duration and
TFLOP/s. --regex names other rungs' kernels (the mma.sync rungs: "mma_|nvjet|sm90_xmma"). --params
runs the rungs that have those parameters with them (ncu names a kernel, not its configuration: one
configuration per run), --metrics adds counters (issued warp instructions, L2 bytes: medians). ncu's
default clock control would lock the clocks at base: none keeps the boost the
benchmarks ran at.
"""
from __future__ import annotations

import argparse
import csv
import io
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

RUNGS = "wgmma_tma,wgmma_persistent,wgmma_cluster,wgmma_epilogue"
REGEX = "wgmma_|nvjet|sm90_xmma"


def parse_params(text: str) -> dict[str, int]:
    """--params' NAME=V,... as a dict."""
    from engine.kernels.problem import parse_param
    return dict(parse_param(part) for part in text.split(",") if part)


def launch(n: int, kernels: list[str], params: dict[str, int] | None = None) -> None:
    """The launches ncu measures: each rung 3 times (tensor_device.run), then cuBLAS FP16 3 times."""
    import numpy as np
    import pycuda.driver as cuda

    from engine.bench import timing
    from engine.kernels import registry
    from engine.kernels.problem import make_inputs, make_problem
    from tests.benchmarks.tensor_device import run
    for kernel in kernels:
        spec = registry.get(kernel)
        run(kernel, n, n, n, reps=3, params={k: v for k, v in (params or {}).items() if k in spec.params})
    # The rungs' own inputs (uniform in [0, 1)): the tensor cores draw less power on constant data
    # (all ones ran cuBLAS at 835 TFLOP/s at 4096^3 on an H200, where the benchmarks measured 784),
    # so a product on other data is not the same product.
    a_host, b_host = make_inputs(make_problem(n, n, n))
    a = cuda.to_device(a_host.astype(np.float16))
    b = cuda.to_device(b_host.astype(np.float16))
    c = cuda.mem_alloc(n * n * 4)
    blas = timing.Cublas()
    for _ in range(3):
        blas.gemm_ex(a, b, c, n, n, n, registry.Precision.FP16)
    cuda.Context.synchronize()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--kernels", default=RUNGS)
    ap.add_argument("--regex", default=REGEX, help="the kernels ncu profiles: the rungs' names and cuBLAS's")
    ap.add_argument("--launch", type=int, help="(under ncu) launch the kernels at this size")
    ap.add_argument("--params", default="", help="NAME=V,...: the configuration of the rungs that take them")
    ap.add_argument("--metrics", default="", help="counters beside the duration, e.g. smsp__inst_executed.sum")
    args = ap.parse_args()
    if args.launch:
        launch(args.launch, [k for k in args.kernels.split(",") if k], parse_params(args.params))
        return 0
    from tests.benchmarks.ncu_compare import ncu_path
    extra = [m for m in args.metrics.split(",") if m]
    for n in (int(s) for s in args.sizes.split(",")):
        cmd = [ncu_path(), "--clock-control", "none", "-k", f"regex:{args.regex}", "--metrics",
               ",".join(["gpu__time_duration.sum", *extra]), "--csv", sys.executable, __file__, "--launch", str(n),
               "--kernels", args.kernels, "--params", args.params]
        print(" ".join(cmd[1:]), flush=True)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
        rows = list(csv.DictReader(io.StringIO("\n".join(l for l in done.stdout.splitlines() if l.startswith('"')))))
        if not rows:
            print(f"ncu gave no CSV:\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}")
            return 1
        durations: dict[str, list[float]] = {}
        counters: dict[tuple[str, str], list[float]] = {}
        for r in rows:
            if r["Metric Name"] != "gpu__time_duration.sum":
                counters.setdefault((r["Kernel Name"], r["Metric Name"]), []).append(float(r["Metric Value"].replace(",", "")))
                continue
            scale = {"ns": 1e-9, "nsecond": 1e-9, "us": 1e-6, "usecond": 1e-6, "ms": 1e-3, "msecond": 1e-3}[r["Metric Unit"]]
            durations.setdefault(r["Kernel Name"], []).append(float(r["Metric Value"].replace(",", "")) * scale)
        print(f"== {n}^3 (ncu gpu__time_duration.sum, median of the launches){' with ' + args.params if args.params else ''}")
        for name, ts in durations.items():
            t = statistics.median(ts)
            print(f"   {name[:60]:60} {len(ts)} launches  {t * 1e3:8.3f} ms  {2.0 * n ** 3 / t / 1e12:7.1f} TFLOP/s")
            for metric in extra:
                if (name, metric) in counters:
                    print(f"      {metric:40} {statistics.median(counters[(name, metric)]):16,.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
