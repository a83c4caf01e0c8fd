"""Autotuning sweep of the FP32 ladder on the GPU: every rung's parameter combinations worth timing,
at one size, each checked against float64 before it is timed; prints the five best per rung and
writes the whole sweep (with cuBLAS at the same size) as a benchmark export, which the Benchmarks
page shows. The catalog's defaults (engine/kernels/catalog.py LADDER) are the winners it prints.

    python3 tests/benchmarks/tune_ladder.py OUT.json [--size 4096] [--kernels a,b] [--top N]

"Worth timing": 128 to 512 threads per block; for the warp-tiled rungs 128 or 256 threads, block
tiles of at least 128 x 128 and at least 64 outputs per thread (smaller tiles and fewer outputs
leave the FMA units waiting on memory; the rest would take the sweep past the ten minutes one
device call may run). Every combination the registry's rules pass is still a
legal choice to run by hand.
"""
from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark, export  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import (  # noqa: E402
    build,
    declared,  # noqa: E402
    registry,
)
from engine.kernels.problem import Problem  # noqa: E402


def candidates(spec: registry.KernelSpec) -> list[dict[str, int]]:
    if spec.name == "mma_pipelined":   # block tiles of 128 x 128 or more, a ring of 3 slots or more
        # 4, 8 or 16 warps, any warp tiles the rules allow: 16 warps of 32 x 64 or 64 x 32 tiles hold
        # half the accumulators of 64 x 64, so at 128 registers a thread twice the warps hide ldmatrix
        # and barrier waits (at 4096^3 none beat 8 warps of 64 x 64: at best 410 TFLOP/s against 457 on
        # an H100; 256 x 256 blocks of 64 x 64 spill and run at 6 to 8). A ring of 2 never won (at most
        # 422 against 449 at 4096^3 on an H100).
        block = spec.launches[-1].block
        return [q for q in spec.combinations() if block(Problem(1, 1, 1, params=q))[0] // 32 in (4, 8, 16)
                and min(q["BM"], q["BN"]) >= 128 and q["STAGES"] >= 3]
    if spec not in registry.LADDER:   # the other tensor-core rungs: few enough to time every one
        return spec.combinations()
    out = []
    for params in spec.combinations():
        probe = Problem(1, 1, 1, params=params)
        threads = spec.launches[-1].block(probe)[0]
        source = declared.read(spec.launches[-1].file)   # a thread's outputs, as the source names them
        down, across = source.named("OUTPUTS_DOWN", probe), source.named("OUTPUTS_ACROSS", probe)
        if not 128 <= threads <= 512:
            continue
        if "WM" in params and (threads > 256 or params["BM"] * params["BN"] < 128 * 128 or down * across < 64):
            continue
        out.append(params)
    return out


def build_all(work: list[tuple[registry.KernelSpec, dict[str, int]]]) -> None:
    """Compile every launch of every configuration (its parameters all given) first, in parallel
    (nvcc is a process of its own): the timing loop then only loads cubins."""
    jobs = [(launch, params) for spec, params in work for launch in spec.launches]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda j: build.build_cubin(j[0].file, j[1], traced=False, arch=j[0].arch), jobs))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--size", default="4096")
    ap.add_argument("--kernels", default=",".join(k.name for k in registry.LADDER))
    ap.add_argument("--top", type=int, default=5)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--reference", default="cublas_sgemm", help="the cuBLAS entry timed before and after")
    args = ap.parse_args()
    (m, n, k), = benchmark.parse_sizes(args.size)
    specs = [registry.get(name) for name in args.kernels.split(",") if name]
    work = [(spec, params) for spec in specs for params in candidates(spec)]
    print(f"{len(work)} configurations at {m}x{n}x{k}: " +
          ", ".join(f"{s.name} {sum(1 for w in work if w[0] is s)}" for s in specs), flush=True)
    start = time.perf_counter()
    build_all(work)
    print(f"compiled in {time.perf_counter() - start:.0f} s", flush=True)
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    settings = benchmark.Settings(warmup=1, reps=args.reps, seconds_per_point=1.0)
    ref = registry.get(args.reference)
    rows = [benchmark.measure(ref.name, m, n, k, settings)]
    for spec, params in work:
        rows.append(benchmark.measure(spec.name, m, n, k, settings, params))
    rows += [benchmark.measure(ref.name, m, n, k, settings)]   # clocks drift: cuBLAS before and after
    print(f"timed in {time.perf_counter() - start:.0f} s", flush=True)
    cublas = [r["gflops"] for r in rows if r["kernel"] == ref.name and r["status"] == "ok"] or [float("nan")]
    print(f"{ref.title}: " + ", ".join(f"{g:,.0f}" for g in cublas) + " GFLOP/s")
    for spec in specs:
        ok = sorted((r for r in rows if r["kernel"] == spec.name and r["status"] == "ok"), key=lambda r: -r["gflops"])
        bad = [r for r in rows if r["kernel"] == spec.name and r["status"] != "ok"]
        print(f"== {spec.name}: {len(ok)} timed, {len(bad)} failed" +
              (f" (first: {bad[0]['status']}: {bad[0].get('error', '')})" if bad else ""))
        for r in ok[:args.top]:
            mark = " (default)" if r["params"] == spec.default_params() else ""
            print(f"   {r['gflops']:>9,.0f} GFLOP/s {100 * r['gflops'] / max(cublas):5.1f}%  {r['params']}{mark}")
        default = [r for r in ok if r["params"] == spec.default_params()]
        if default and default[0] is not ok[0]:
            print(f"   default: {default[0]['gflops']:,.0f} GFLOP/s {spec.default_params()}")
    prov = benchmark.provenance(status.info, settings)
    ladder = "tensor-core" if any(s in registry.TENSOR_LADDER for s in specs) else "FP32"
    prov["sweep"] = f"autotuning of the {ladder} ladder at {m}x{n}x{k}"
    print(f"wrote {export.write_json(rows, prov, Path(args.out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
