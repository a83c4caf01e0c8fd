"""The FP32 family at the sizes where one block tile and all of K per block leave the GPU idle or
the float4 paths fall back: cuBLAS SGEMM, the ladder's top rungs at their defaults, and split_k at a
few block tiles times every SPLITK, each checked against float64 before it is timed. Prints, per
size, the fastest of each kernel as % of cuBLAS, and writes the whole sweep as a benchmark export:
the selection table (engine/bench/selection.py) is read from it.

    python3 tests/benchmarks/size_sweep.py OUT.json [--sizes 1000,1024,...] [--reps 10] [--defaults-only]
    python3 tests/benchmarks/size_sweep.py OUT.json --tensor [--sizes ...]

--tensor sweeps the tensor cores' family instead: cuBLAS FP16 (before and after), the top tensor rungs
at their defaults, and wgmma_stream_k at both block tiles times SPLITS, CLUSTER and SMS (the
configuration its header says is to be chosen per size: BN 128 for a C of few tiles, 256 above).

--defaults-only times only cuBLAS and the ladder's top rungs at their defaults, after a change to one
of them: shipped beside the full sweep of the same GPU, it replaces their rows (selection.load keeps
each configuration's latest timing) and split_k's stay as they were timed.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark, export  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import registry  # noqa: E402
from tests.benchmarks.tune_ladder import build_all  # noqa: E402

SIZES = "1000,1024,2048,3000,2000x3000x700,4096x1024x2048,4096x4096x128,4095,4096,4097,8191,8192"
# Block tiles worth splitting: the prefetched sweep's best at 128 x 256, 128 x 128 and 64 x 256
# (engine/bench/recorded/tuning/): fewer, larger blocks or more, smaller ones.
TILES = ({"BM": 128, "BN": 256, "BK": 16, "WM": 32, "WN": 128, "WNITER": 2, "TM": 8, "TN": 4},
         {"BM": 128, "BN": 128, "BK": 16, "WM": 32, "WN": 128, "WNITER": 2, "TM": 8, "TN": 4},
         {"BM": 64, "BN": 256, "BK": 8, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4})
DEFAULTS = ("warptile", "double_buffered", "prefetched")
TENSOR_DEFAULTS = ("mma_tma", "wgmma_tma", "wgmma_epilogue")
TENSOR_CHOSEN = "wgmma_stream_k"


def tensor_configs() -> list[dict[str, int]]:
    """wgmma_stream_k's block tiles (BN) times how far a tile's K is shared out (SPLITS), clusters of
    one block or two (CLUSTER) and the blocks launched (SMS), its other parameters at their defaults."""
    spec = registry.get(TENSOR_CHOSEN)
    return [{**spec.default_params(), "BN": bn, "SPLITS": splits, "CLUSTER": cluster, "SMS": sms}
            for bn in spec.params["BN"] for splits in spec.params["SPLITS"] for cluster in spec.params["CLUSTER"]
            for sms in (128, 132)]


def split_configs(m: int, n: int, k: int) -> list[dict[str, int]]:
    """Every tile at every SPLITK, but where the tiles alone give several waves only the small splits."""
    splits = registry.get("split_k").params["SPLITK"]
    big = m * n >= 4096 * 4096 and k >= 2048
    return [{**t, "SPLITK": s} for t in TILES for s in splits if not big or s <= 2]


def kernels_at(m: int, n: int, k: int) -> tuple[str, ...]:
    """split_k, and where N or K is not a multiple of 4 (the float4 paths' fallback) its padded form."""
    return ("split_k", "split_k_padded") if n % 4 or k % 4 else ("split_k",)


def sweep(args, sizes, reference: str, defaults: tuple[str, ...], swept_at, detail, what: str) -> int:
    """At each size: the reference before and after (clocks drift), the defaults, and the configurations
    swept there (swept_at(m, n, k): (kernel, params) pairs, compiled first); prints each kernel's fastest
    as % of the reference (detail(kernel, params): its configuration in a few words) and writes the export."""
    start = time.perf_counter()
    work = {(name, tuple(sorted(c.items()))) for size in sizes for name, c in swept_at(*size)}
    build_all([(registry.get(name), {**registry.get(name).default_params(), **dict(c)}) for name, c in work])
    print(f"compiled {len(work)} configurations in {time.perf_counter() - start:.0f} s", flush=True)
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    settings = benchmark.Settings(warmup=1, reps=args.reps, seconds_per_point=1.0)
    rows = []
    for m, n, k in sizes:
        here = [benchmark.measure(reference, m, n, k, settings)]
        here += [benchmark.measure(name, m, n, k, settings) for name in defaults]
        here += [benchmark.measure(name, m, n, k, settings, c) for name, c in swept_at(m, n, k)]
        here.append(benchmark.measure(reference, m, n, k, settings))
        rows += here
        ok = [r for r in here if r["status"] == "ok"]
        ref = max((r["gflops"] for r in ok if r["kernel"] == reference), default=float("nan"))   # NaN: no % this size
        line = []
        for name in dict.fromkeys([*defaults, *(name for name, _ in swept_at(m, n, k))]):
            best = max((r for r in ok if r["kernel"] == name), key=lambda r: r["gflops"], default=None)
            if best:
                line.append(f"{name} {best['gflops'] / 1e3:.1f} ({100 * best['gflops'] / ref:.0f}%{detail(name, best['params'])})")
        wrong = [r for r in here if r["status"] != "ok"]
        print(f"{m}x{n}x{k}: {reference} {ref / 1e3:.1f} TF | " + " | ".join(line) +
              (f" | {len(wrong)} not ok: {wrong[0].get('error', wrong[0]['status'])}" if wrong else ""), flush=True)
    print(f"timed in {time.perf_counter() - start:.0f} s")
    prov = benchmark.provenance(status.info, settings)
    prov["sweep"] = what
    print(f"wrote {export.write_json(rows, prov, Path(args.out))}")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--defaults-only", action="store_true", help="cuBLAS and the ladder's top rungs only")
    ap.add_argument("--tensor", action="store_true", help="the tensor cores' family: wgmma_stream_k's configurations")
    args = ap.parse_args()
    sizes = benchmark.parse_sizes(args.sizes)
    if args.tensor:
        configs = tensor_configs()
        return sweep(args, sizes, "cublas_gemm_fp16", TENSOR_DEFAULTS, lambda m, n, k: [(TENSOR_CHOSEN, c) for c in configs],
                     lambda name, p: f" BN {p['BN']} S{p['SPLITS']} C{p['CLUSTER']} SMS {p['SMS']}" if name == TENSOR_CHOSEN else "",
                     f"{TENSOR_CHOSEN}'s block tiles, SPLITS, CLUSTER and SMS, and the top tensor rungs, at sizes of every shape")
    return sweep(args, sizes, "cublas_sgemm", DEFAULTS,
                 lambda m, n, k: [] if args.defaults_only else [(name, c) for name in kernels_at(m, n, k)
                                                                 for c in split_configs(m, n, k)],
                 lambda name, p: f" S{p['SPLITK']} {p['BM']}x{p['BN']}" if name.startswith("split_k") else "",
                 "the FP32 ladder's top rungs at their defaults, at sizes of every shape" if args.defaults_only else
                 "split_k's block tiles and SPLITK, and the FP32 ladder's top rungs, at sizes of every shape")


if __name__ == "__main__":
    sys.exit(main())
