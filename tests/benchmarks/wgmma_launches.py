"""Where wgmma_epilogue and cuBLAS FP16 part at 4096^3 (run on the device): Nsight Compute gives both
kernels the same duration (tests/benchmarks/ncu_wgmma.py), CUDA events give cuBLAS 0.6% more. Each
is timed here one launch between two events (median of 40) and 20 launches back to back between two
events (per launch, median of 10 batches), alternating, in one process: if cuBLAS gains more from
back-to-back launches than the rung, the difference lies between the kernels (launch overhead, a
kernel starting before the previous one ends), not in them. Prints a table.

    python3 tests/benchmarks/wgmma_launches.py [--sizes 4096,8192] [--params '{"SMS": 128}']
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import pycuda.autoinit  # noqa: E402,F401
import pycuda.driver as cuda  # noqa: E402

from engine.bench import timing  # noqa: E402
from engine.devices import gpu  # noqa: E402
from engine.kernels import registry  # noqa: E402
from engine.kernels.problem import make_inputs, make_problem  # noqa: E402
from engine.tracing.plan import global_shapes, size_arguments  # noqa: E402


def per_launch(fn, batch: int, samples: int) -> float:
    """Median ms per launch over `samples` batches of `batch` launches between two events."""
    times = []
    for _ in range(samples):
        start, end = cuda.Event(), cuda.Event()
        start.record()
        for _ in range(batch):
            fn()
        end.record()
        end.synchronize()
        times.append(end.time_since(start) / batch)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--params", default="{}")
    args = ap.parse_args()
    name = pycuda.autoinit.device.name()
    blas = timing.Cublas()
    spec = registry.get("wgmma_epilogue")
    for n in (int(s) for s in args.sizes.split(",")):
        p = registry.bind(spec, make_problem(n, n, n, params=json.loads(args.params)))
        a, b = make_inputs(p)
        launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), spec.inputs)
        launcher.upload({"A": a, "B": b})
        (launch,) = [launcher.kernel(l.file, p.params, l.grid(p), l.block(p), traced=False, shared=l.shared_bytes(p),
                                     arch=l.arch, boxes=l.tensor_maps(p)) for l in spec.launches]
        da = cuda.to_device(a.astype("float16"))
        db = cuda.to_device(b.astype("float16"))
        dc = cuda.mem_alloc(4 * n * n)

        def cublas(da=da, db=db, dc=dc, n=n) -> None:
            blas.gemm_ex(da, db, dc, n, n, n, registry.Precision.FP16)

        for fn in (launch, cublas):
            per_launch(fn, 5, 3)   # warm
        got: dict[str, list[float]] = {}
        for _ in range(3):   # alternating rounds: the clock drifts under load
            for label, fn in (("wgmma_epilogue", launch), ("cuBLAS FP16", cublas)):
                got.setdefault(f"{label} single", []).append(per_launch(fn, 1, 40))
                got.setdefault(f"{label} x20", []).append(per_launch(fn, 20, 10))
        flops = 2.0 * n ** 3
        print(f"== {n}^3 on {name}: wgmma_epilogue {p.params}, ms per launch (median of rounds) and TFLOP/s", flush=True)
        for label, ms in got.items():
            t = statistics.median(ms)
            print(f"   {label:26} {t:8.4f} ms {flops / t / 1e9:8.1f} TFLOP/s   rounds {', '.join(f'{x:.4f}' for x in ms)}")
        for how in ("single", "x20"):
            ours, theirs = statistics.median(got[f"wgmma_epilogue {how}"]), statistics.median(got[f"cuBLAS FP16 {how}"])
            print(f"   {how:6}: wgmma_epilogue at {100 * theirs / ours:6.2f}% of cuBLAS FP16")
        launcher.free()
    return 0


if __name__ == "__main__":
    sys.exit(main())
