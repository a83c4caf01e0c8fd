"""The tensor rungs and cuBLAS FP16 at sizes around 4096 and 8192 that are and are not multiples of 8
(run on the device): times every tensor rung but the two WMMA ones that need multiples of 16; prints,
per size, cuBLAS FP16, wgmma_tma (A and B padded first where K or N is not a multiple of 8),
wgmma_padded (padded at every size) and mma_pipelined in TFLOP/s, and the fastest rung over
cuBLAS FP16, then writes the run as the benchmark export the Tensor cores page's section 6 reads
(engine/bench/recorded/any_size/). The speed target it checks: at 4095³, 4097³ and 8191³ the best
tensor rung at 3x cuBLAS FP16 or more.

    python3 tests/benchmarks/any_size.py OUT.json [--sizes 4088,4092,...]
    python3 tests/benchmarks/any_size.py --from engine/bench/recorded/any_size/h100-2026-11-25.json   # no GPU
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark, export, speeds  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import registry  # noqa: E402

SIZES = "4088,4092,4095,4096,4097,4100,4104,4112,8191,8192"
TARGET = {4095: 3.0, 4097: 3.0, 8191: 3.0}   # best tensor rung over cuBLAS FP16 (issue: "Past cuBLAS")


def report(df) -> int:
    table = speeds.cliff(df)
    print(f"{'N':>6} {'x8':>3} " + " ".join(f"{k:>17}" for k in speeds.CLIFF) + f" {'best rung':>14} {'best/cuBLAS':>11}")
    for _, r in table.iterrows():
        cells = " ".join(f"{r[k]:17,.1f}" if r[k] == r[k] else f"{'refused':>17}" for k in speeds.CLIFF)
        print(f"{int(r['N']):>6} {'yes' if r['multiple of 8'] else 'no':>3} {cells} {r['best rung'] or '-':>14} "
              f"{r['best / cuBLAS']:10.2f}x")
    missed = [f"{n}³ ({row:.2f}x < {want}x)" for n, want in TARGET.items()
              for row in table.loc[table["N"] == n, "best / cuBLAS"] if not row >= want]
    print("target (best rung >= 3x cuBLAS FP16 at 4095³, 4097³, 8191³): " + ("met" if not missed else
          "missed at " + ", ".join(missed)))
    print(speeds.cliff_story(table).replace("**", ""))
    return 0


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--sizes", default=SIZES)
    ap.add_argument("--from", dest="source", help="print the table of a recorded run instead of timing one")
    args = ap.parse_args()
    if args.source:
        df, prov = benchmark.load_document(Path(args.source).read_text())
        print(f"{speeds.run_label(prov, False)}")
        return report(df)
    if not args.out:
        ap.error("OUT.json is needed to time a run")
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    kernels = [k for k in registry.TENSOR_RUNGS if k != "wmma_as_written" and k != "wmma_warp"] + [speeds.REFERENCE]
    settings = benchmark.Settings()
    start, rows = time.perf_counter(), []
    for m, n, k in benchmark.parse_sizes(args.sizes):
        for name in kernels:
            rows.append(benchmark.measure(name, m, n, k, settings))
            print(f"{name:18} {m}x{n}x{k}: {rows[-1]['status']} {rows[-1].get('gflops', 0) / 1000:8.1f} TFLOP/s",
                  flush=True)
    print(f"timed in {time.perf_counter() - start:.0f} s")
    prov = benchmark.provenance(status.info, settings)
    path = export.write_json(rows, prov, Path(args.out))
    print(f"wrote {path}")
    df, _ = benchmark.load_document(Path(path).read_text())
    return report(df)


if __name__ == "__main__":
    sys.exit(main())
