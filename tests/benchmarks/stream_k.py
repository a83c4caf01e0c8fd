"""wgmma_stream_k beside wgmma_epilogue and cuBLAS FP16 (run on the device), in one process: the rung
checked against float64 on all of C at sizes where it shares tiles out and where it does not, the same
bits over two launches, then TFLOP/s (CUDA events, median of 20) at sizes whose last wave of tiles is
partial, whole, or the only one, each with cuBLAS FP16 and wgmma_epilogue before and after the rung's
choices. Prints a table and writes the timings as a benchmark export.

    python3 tests/benchmarks/stream_k.py OUT.json [--sizes 3000,4096,...,1000x1000x8192] [--no-check]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402

from engine.bench import benchmark, export  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import reference, registry  # noqa: E402

RUNG = "wgmma_stream_k"
# Shared out: a quarter-full last wave (3000³), K long against few tiles (1000 x 1000 x 8192, 256 x 256
# x 4096), partial tiles (4095 x 4104 x 4096), a cluster's second block below C (300 x 2056 x 2048);
# not: runs too short for the hand-over (4095 x 4104 x 520, 1024³), whole waves (4096³).
CHECK_SIZES = ((1, 8, 8), (17, 40, 24), (300, 2056, 72), (4095, 4104, 520), (1024, 1024, 1024), (256, 256, 4096),
               (128, 512, 8192), (4096, 4096, 4096), (1000, 1000, 8192), (3000, 3000, 3000), (4095, 4104, 4096),
               (300, 2056, 2048), (2000, 3000, 704))
# The defaults named in full: a run of wgmma_stream_k that names none of its parameters takes the size
# sweeps' choice for its size (engine/bench/selection.py), not its defaults.
CHOICES = (registry.get("wgmma_stream_k").default_params(), {"SPLITS": 2}, {"CLUSTER": 1}, {"SMS": 132})
SIZES = "4096,8192,3000,1000x1000x8192,4095x4104x4096,256x256x4096,2048,1024"


def check() -> int:
    from tests.benchmarks.tensor_device import run  # here: it initialises CUDA in this process
    wrong = 0
    for size in CHECK_SIZES:
        for params in CHOICES:
            try:
                c, a, b, _ = run(RUNG, *size, params=params)
                err = reference.relative_error(c, a @ b)
                said = "ok" if err <= registry.get(RUNG).tolerance else f"rel error {err:.2e}"
            except Exception as exc:   # a refused choice or a fault: said, and counted
                said = str(exc)[:160]
            wrong += said != "ok"
            if said != "ok":
                print(f"   {RUNG} {params} at {'x'.join(map(str, size))}: {said}", flush=True)
    first, second = (run(RUNG, 3000, 3000, 3000)[0] for _ in range(2))
    same = np.array_equal(first.view(np.uint32), second.view(np.uint32))
    print(f"checked {len(CHECK_SIZES) * len(CHOICES)} cases against float64: {wrong} wrong; "
          f"3000³ twice: {'the same bits' if same else 'DIFFERENT bits'}", flush=True)
    return wrong + (not same)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--no-check", action="store_true")
    args = ap.parse_args()
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    print(f"GPU: {status.name}", flush=True)
    bad = 0 if args.no_check else check()
    settings = benchmark.Settings(warmup=3, reps=20, seconds_per_point=1.0)
    rows = []
    for m, n, k in benchmark.parse_sizes(args.sizes):
        here = [benchmark.measure(r, m, n, k, settings) for r in ("cublas_gemm_fp16", "wgmma_epilogue")]
        here += [benchmark.measure(RUNG, m, n, k, settings, q) for q in CHOICES]
        here += [benchmark.measure(r, m, n, k, settings) for r in ("cublas_gemm_fp16", "wgmma_epilogue")]
        rows += here
        tf = {}
        for r in here:
            tf.setdefault((r["kernel"], str(r["params"])), []).append(r["gflops"] / 1000 if r["status"] == "ok" else 0.0)
        cublas = max(tf[("cublas_gemm_fp16", "{}")])
        print(f"== {m}x{n}x{k}: cuBLAS FP16 " + " / ".join(f"{v:.1f}" for v in tf[("cublas_gemm_fp16", "{}")]) +
              " TFLOP/s (before / after)", flush=True)
        for (kernel, params), values in tf.items():
            if kernel != "cublas_gemm_fp16":
                print(f"   {kernel:15} {params:40} " + " / ".join(f"{v:7.1f} ({100 * v / cublas:5.1f}%)" for v in values),
                      flush=True)
    prov = benchmark.provenance(status.info, settings)
    prov["sweep"] = f"{RUNG}'s choices beside wgmma_epilogue and cuBLAS FP16 (before and after)"
    print(f"wrote {export.write_json(rows, prov, Path(args.out))}", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
