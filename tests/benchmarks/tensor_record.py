"""The recorded run of the tensor-core ladder (run on the device): every rung but the document's
kernel (refused above 2,048), with cuBLAS FP16 and BF16, torch.mm in FP16 (where PyTorch is
installed) and FP32 cuBLAS with and without TF32, at 1024³ to 8192³; mma_pipelined with the
winner of an autotuning sweep when one is given (the registry's default is then set to it). Prints
TFLOP/s and % of cuBLAS FP16, and writes the run as a benchmark export for the Tensor cores page.

    python3 tests/benchmarks/tensor_record.py OUT.json [--tuning SWEEP.json] [--sizes 1024,2048,4096,8192]
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark, export  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import registry  # noqa: E402

BASELINES = ["cublas_gemm_fp16", "cublas_gemm_bf16", "torch_mm_fp16", "cublas_sgemm_tf32", "cublas_sgemm"]


def winner(sweep: Path, kernel: str) -> dict[str, int] | None:
    """The fastest correct configuration of the kernel in a sweep export, or None."""
    rows = [r for r in json.loads(sweep.read_text())["results"] if r["kernel"] == kernel and r["status"] == "ok"]
    return max(rows, key=lambda r: r["gflops"])["params"] if rows else None


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--tuning", help="a tune_ladder.py export: mma_pipelined runs with its winner")
    ap.add_argument("--sizes", default="1024,2048,4096,8192")
    args = ap.parse_args()
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    tuned = winner(Path(args.tuning), "mma_pipelined") if args.tuning else None
    print(f"mma_pipelined with {tuned or registry.get('mma_pipelined').default_params()}", flush=True)
    kernels = [k for k in registry.TENSOR_RUNGS if k != "wmma_as_written"] + BASELINES   # torch.mm: an error row without PyTorch
    settings = benchmark.Settings(warmup=2, reps=20, seconds_per_point=1.0)
    start, rows = time.perf_counter(), []
    for m, n, k in benchmark.parse_sizes(args.sizes):
        at = {r: benchmark.measure(r, m, n, k, settings, tuned if r == "mma_pipelined" else None) for r in kernels}
        rows += at.values()
        ref = at["cublas_gemm_fp16"].get("gflops") if at["cublas_gemm_fp16"]["status"] == "ok" else None
        print(f"== {m}x{n}x{k}", flush=True)
        for name, r in at.items():
            if r["status"] != "ok":
                print(f"   {name:20} {r['status']}: {r.get('error', '')}")
                continue
            pct = f"{100 * r['gflops'] / ref:6.1f}% of cuBLAS FP16" if ref else ""
            print(f"   {name:20} {r['gflops'] / 1000:8.1f} TFLOP/s {pct}")
    print(f"timed in {time.perf_counter() - start:.0f} s")
    print(f"wrote {export.write_json(rows, benchmark.provenance(status.info, settings), Path(args.out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
