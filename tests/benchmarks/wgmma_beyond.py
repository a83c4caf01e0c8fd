"""The persistent wgmma rungs against cuBLAS FP16 (run on the device), in one process: every
configuration of wgmma_persistent, wgmma_cluster and wgmma_epilogue (or of the rungs --kernels names:
mma_tma, the mma.sync rung fed the same way) checked against float64 on all of C at sizes with
partial tiles, then timed at each size with cuBLAS FP16 (before and after: clocks drift) and the
rungs not swept (wgmma_tma, mma_pipelined, and those --kernels leaves out) at their defaults.
Prints, per size, the best configurations of each rung in TFLOP/s and % of cuBLAS FP16, and
writes each size's sweep as a benchmark export (the Benchmarks page's sweeps).

    python3 tests/benchmarks/wgmma_beyond.py OUT_DIR [--sizes 4096,8192] [--kernels a,b] [--no-check]
                                             [--only BN=256,STAGES=4,GROUP=4/8] [--rounds N]

--only keeps the configurations whose parameters take the values named (a/b: either), where the
whole product of a rung's choices is more than one device run can compile, check and time.
--rounds N times every configuration N times over (cuBLAS FP16 once more, after), each round all of
them in turn, and prints and writes each one's median round (and prints its range): an A/B of choices
a few tenths of a percent apart, which one timing of each, minutes apart as the clocks drift, cannot tell.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark, export  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import reference, registry  # noqa: E402
from tests.benchmarks.tune_ladder import build_all  # noqa: E402

RUNGS = ("wgmma_persistent", "wgmma_cluster", "wgmma_epilogue")
# Partial tiles in M (an odd number of tile rows: a cluster's second block then has no rows of C),
# in N and in K, and more tiles than SMs (each block loops).
CHECK_SIZES = ((300, 2056, 72), (4095, 4104, 520))


_REFERENCE: dict = {}


def check(kernel: str, params: dict, size: tuple[int, int, int]) -> str:
    """'ok' or what went wrong: the whole of C against float64 of the rounded inputs (the same inputs
    for every kernel at a size, so the float64 product is computed once per size)."""
    from tests.benchmarks.tensor_device import run  # here: it initialises CUDA in this process
    c, a, b, _ = run(kernel, *size, params=params)
    if size not in _REFERENCE:
        _REFERENCE[size] = a @ b
    err = reference.relative_error(c, _REFERENCE[size])
    return "ok" if err <= registry.get(kernel).tolerance else f"rel error {err:.2e}"


def only(text: str) -> dict[str, set[int]]:
    """--only's NAME=V[/V...] list as {name: allowed values}."""
    keep: dict[str, set[int]] = {}
    for part in filter(None, text.split(",")):
        name, _, values = part.partition("=")
        keep[name.strip()] = {int(v) for v in values.split("/")}
    return keep


def _key(row: dict) -> tuple:
    return row["kernel"], tuple(sorted(row["params"].items()))


def median_rows(rows: list[dict]) -> list[dict]:
    """One row per (kernel, configuration): of its correct rows the median one (of an even number, the
    lower of the middle two: a timing that was measured, not an average of two), else its first row."""
    by: dict[tuple, list[dict]] = {}
    for r in rows:
        by.setdefault(_key(r), []).append(r)
    out = []
    for group in by.values():
        ok = sorted((r for r in group if r["status"] == "ok"), key=lambda r: r["gflops"])
        out.append(ok[(len(ok) - 1) // 2] if ok else group[0])
    return out


def medians(rows: list[dict]) -> dict[tuple, tuple[float, tuple[float, float]]]:
    """Each (kernel, configuration)'s median GFLOP/s over its correct rows (as median_rows picks it), with
    their lowest and highest."""
    spread: dict[tuple, list[float]] = {}
    for r in rows:
        if r["status"] == "ok":
            spread.setdefault(_key(r), []).append(r["gflops"])
    return {_key(r): (r["gflops"], (min(spread[_key(r)]), max(spread[_key(r)])))
            for r in median_rows(rows) if r["status"] == "ok"}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--kernels", default=",".join(RUNGS))
    ap.add_argument("--no-check", action="store_true")
    ap.add_argument("--only", default="", help="NAME=V[/V...],...: only the configurations with these values")
    ap.add_argument("--rounds", type=int, default=1, help="time everything this many times over, in turn")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    specs = [registry.get(k) for k in args.kernels.split(",") if k]
    keep = only(args.only)
    # A rung without a named parameter keeps its every choice of it.
    work = [(s, q) for s in specs for q in s.combinations() if all(n not in q or q[n] in vs for n, vs in keep.items())]
    start = time.perf_counter()
    build_all(work)
    print(f"{len(work)} configurations compiled in {time.perf_counter() - start:.0f} s", flush=True)
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    print(f"GPU: {status.name}", flush=True)
    if not args.no_check:
        bad = 0
        for spec, params in work:
            for size in CHECK_SIZES:
                said = check(spec.name, params, size)
                bad += said != "ok"
                if said != "ok":
                    print(f"   {spec.name} {params} at {'x'.join(map(str, size))}: {said}", flush=True)
        print(f"checked {len(work)} configurations at {len(CHECK_SIZES)} sizes against float64: {bad} wrong", flush=True)
    settings = benchmark.Settings(warmup=2, reps=10, seconds_per_point=1.0)
    for m, n, k in benchmark.parse_sizes(args.sizes):
        # The rungs not swept at their defaults, beside the swept ones' every configuration.
        fixed = ["mma_pipelined", "wgmma_tma", *(r for r in RUNGS if r not in {s.name for s in specs})]
        rows = []
        for _ in range(args.rounds):
            rows += [benchmark.measure(r, m, n, k, settings) for r in ["cublas_gemm_fp16", *fixed]]
            rows += [benchmark.measure(spec.name, m, n, k, settings, params) for spec, params in work]
        rows.append(benchmark.measure("cublas_gemm_fp16", m, n, k, settings))
        timed = medians(rows)
        # One round: the faster of cuBLAS before and after (clocks drift); more: the median of them all.
        cublas = (max(r["gflops"] for r in rows if r["kernel"] == "cublas_gemm_fp16" and r["status"] == "ok")
                  if args.rounds == 1 else timed[("cublas_gemm_fp16", ())][0])
        print(f"== {m}x{n}x{k} on {status.name}: cuBLAS FP16 " + ", ".join(
            f"{r['gflops'] / 1000:.1f}" for r in rows if r["kernel"] == "cublas_gemm_fp16")
            + " TFLOP/s (each round's, and after)" + (f": median {cublas / 1000:.1f}" if args.rounds > 1 else ""))
        for name in [*fixed, *(s.name for s in specs)]:
            ok = sorted(((g, spread, dict(params)) for (kernel, params), (g, spread) in timed.items() if kernel == name),
                        key=lambda t: -t[0])
            bad = [r for r in rows if r["kernel"] == name and r["status"] != "ok"]
            for g, spread, params in ok[:4]:
                print(f"   {name:17} {g / 1000:7.1f} TFLOP/s {100 * g / cublas:6.1f}%  {params}"
                      + (f"  ({spread[0] / 1000:.1f}-{spread[1] / 1000:.1f})" if args.rounds > 1 else ""))
            for r in bad[:3]:
                print(f"   {name:17} {r['status']}: {r.get('error', '')[:200]}")
        prov = benchmark.provenance(status.info, settings)
        prov["sweep"] = f"the configurations of {', '.join(s.name for s in specs)} at {m}x{n}x{k}, with cuBLAS FP16 before and after"
        if args.rounds > 1:   # each configuration's median round, as printed
            rows = median_rows(rows)
            prov["sweep"] += f", each timed in {args.rounds} rounds (cuBLAS in one more): its median round"
        print(f"wrote {export.write_json(rows, prov, out / f'wgmma-{m}x{n}x{k}.json')}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
