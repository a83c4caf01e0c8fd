"""Where mma_pipelined's time goes (run on the device). mma_tma's header names what it fixes in
mma_pipelined: the copies every thread issues between its multiplies, the barrier across the block
at every k-tile, and (by staying on the SM, tile after tile) C's stores at the end of each block's
only tile. Here each is taken out of mma_pipelined's own source, one at a time and all at once, and
the kernel timed without it at its sweep's best tiles:

  - "no barrier": the SYNC() inside the k-loop is left out (the one before it stays). Warps may then
    read a slot before another thread's copy into it has landed, or copy over one still being read:
    the result is wrong (the recorded runs: relative error 1.3e-3, 55 times the kernel's own); what
    the time shows is what waiting at the barrier costs;
  - "no copies": the k-loop copies nothing (the ring's first STAGES - 1 tiles are copied as before,
    and the later k-tiles multiply whatever those slots hold): the product is wrong, and the time is
    the multiplies', the fragments' reads and the barrier's without a copy in flight;
  - "no stores": C is never written (store_pair returns at once, on a test of M that the compiler
    cannot decide, so the accumulators are still made);
  - "none of the three": what is left: ldmatrix and mma.sync, each k step's fragments read under the last
    step's multiplies, as the kernel does.

Beside them, mma_tma (all three fixed by design) and cuBLAS FP16, before and after. The result of each
variant is compared with float64 on sampled rows and printed (only "as written" must be right).
Writes OUT.json (shipped in engine/bench/recorded/costs/); the Tensor cores page draws it.

    python3 tests/benchmarks/mma_costs.py OUT.json [--sizes 4096,8192] [--params BM=128,BN=256,...]
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from engine.bench import benchmark  # noqa: E402
from engine.devices import gpu_client  # noqa: E402
from engine.kernels import reference, registry  # noqa: E402
from engine.kernels.problem import make_inputs, make_problem  # noqa: E402
from engine.tracing.plan import global_shapes, size_arguments  # noqa: E402

FORMAT = "cuda-matmul-explorer mma costs 1"   # engine/bench/speeds.py COSTS_FORMAT reads it
PAUSE_S = 0.25   # the GPU idle before each point, as between the engine benchmark's points
# The sweep's best tiles on both GPUs at 4096^3 (engine/bench/recorded/tuning/*-tensor-mma-4096.json),
# and its best place for the copies (*-mma-pipelined-copy-at-*.json), named so the file says so.
BEST = {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "STAGES": 4, "BK": 64, "COPY_AT": 1}

# The three pieces of the source each variant leaves out; the script stops if the source no longer has them.
BARRIER = "                CP_ASYNC_WAIT(STAGES - 2);\n                SYNC();\n"
COPIES = ("                if (next < tiles) copy_tiles<kCopies>(As, Bs, A, B, M, N, K, row0, col0, next, "
          "next % STAGES);\n")
STORES = "    bool inside = r < M && c < N;   // lanes"


def variants(text: str) -> dict[str, tuple[str, str]]:
    """name -> (what the chart calls it, the source)."""
    for piece in (BARRIER, COPIES, STORES):
        if text.count(piece) != 1:
            raise SystemExit(f"cuda/mma_pipelined.cu no longer has this line once: {piece.strip()!r}")
    no_barrier = text.replace(BARRIER, "                CP_ASYNC_WAIT(STAGES - 2);\n")
    no_copies = text.replace(COPIES, "")
    no_stores = text.replace(STORES, "    if (M > 0) return;   // always: C is never written\n" + STORES)
    none = no_barrier.replace(COPIES, "").replace(STORES, "    if (M > 0) return;\n" + STORES)
    return {"as written": ("mma_pipelined as written", text),
            "no barrier": ("without the barrier in the k-loop", no_barrier),
            "no stores": ("without its stores of C", no_stores),
            "no copies": ("without the copies in the k-loop", no_copies),
            "none of the three": ("without all three", none)}


def timed(calls, launches: int, samples: int) -> float:
    """The median over samples of the time per launch, `launches` back to back per sample (ms)."""
    import pycuda.driver as cuda
    times = []
    for _ in range(samples):
        start, end = cuda.Event(), cuda.Event()
        start.record()
        for _ in range(launches):
            for call in calls:
                call()
        end.record()
        end.synchronize()
        times.append(end.time_since(start) / launches)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--params", default=",".join(f"{k}={v}" for k, v in BEST.items()))
    ap.add_argument("--rounds", type=int, default=5, help="each variant timed this often, in turn with the others")
    args = ap.parse_args()
    import pycuda.autoinit  # noqa: F401 - here, not above: the variants are read without a GPU (tests/test_mma_costs.py)
    import pycuda.driver as cuda

    from engine.devices import gpu
    params = {k: int(v) for k, v in (kv.split("=") for kv in args.params.split(","))}
    status = gpu_client.status()
    if not status.available:
        print(f"no GPU: {status.reason}")
        return 1
    work = Path(tempfile.mkdtemp())
    files, labels = {}, {"mma_tma": "mma_tma (TMA, mbarriers, persistent)"}
    for name, (label, text) in variants((ROOT / "cuda" / "mma_pipelined.cu").read_text()).items():
        files[name], labels[name] = work / f"mma_pipelined_{name.replace(' ', '_')}.cu", label
        files[name].write_text(text)
    pipelined, tma = registry.get("mma_pipelined"), registry.get("mma_tma")
    settings = benchmark.Settings(warmup=1, reps=5, seconds_per_point=1.0)
    rows, cublas = [], {}
    for n in (int(s) for s in args.sizes.split(",")):
        cublas[str(n)] = {"before": benchmark.measure("cublas_gemm_fp16", n, n, n, settings)["gflops"] / 1e3}
        p = registry.bind(pipelined, make_problem(n, n, n, params=params))
        a, b = make_inputs(p)
        launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), pipelined.inputs)
        launcher.upload({"A": a, "B": b})
        calls = {name: launcher.launches(pipelined, p, source_override=str(f)) for name, f in files.items()}
        pt = registry.bind(tma, make_problem(n, n, n))
        tma_launcher = gpu.Launcher({}, global_shapes(pt), size_arguments(pt), tma.inputs)
        tma_launcher.upload({"A": a, "B": b})
        calls["mma_tma"] = tma_launcher.launches(tma, pt)
        sample = np.random.default_rng(1).choice(n, min(n, 256), replace=False)
        expected = a[sample].astype(np.float16).astype(np.float64) @ b.astype(np.float16).astype(np.float64)
        errors, worst = {}, {}
        for name, cs in calls.items():
            owner = tma_launcher if name == "mma_tma" else launcher
            gpu.fill_nan(owner.buffer("C"), np.dtype(np.float32), n * n)   # C of this variant, not the last one's
            timed(cs, 1, 1)   # loads, and a first run whose C is checked
            cuda.Context.synchronize()
            c = owner.download("C")
            # NaN where C was not written (no stores): JSON's null, not the non-standard NaN.
            errors[name] = reference.relative_error(c[sample], expected)
            worst[name] = reference.worst_error(c[sample], expected)
            # The benchmark's gate (engine/bench/timing.py): the whole and each element within tolerance.
            if name in ("as written", "mma_tma") and not (errors[name] <= pipelined.tolerance and
                                                           worst[name] <= pipelined.tolerance):
                print(f"{name} at {n}^3: relative error {errors[name]:.2e}, worst element {worst[name]:.2e}, "
                      f"over {pipelined.tolerance:.0e}: stopped")
                return 1
        # As the engine's benchmark times (engine/bench/timing.py): short bursts, a few samples of about
        # a millisecond of work after a warm launch, with the GPU idle between points, so that every
        # figure here compares with the recorded runs' and with cuBLAS's. Run back to back for seconds,
        # the card reaches its power limit and lowers its clocks: a first version of this script, timing
        # 0.1 s samples without a pause, had mma_pipelined at 409 TFLOP/s at 4096^3 (H200), not about 450.
        launches = max(1, int(np.ceil(1e-3 / (2.0 * n ** 3 / 500e12))))
        per_round = {name: [] for name in calls}
        for _ in range(args.rounds):   # in turn: the clocks' drift falls on every variant alike
            for name, cs in calls.items():
                time.sleep(PAUSE_S)
                timed(cs, 1, 1)
                per_round[name].append(timed(cs, launches, 5))
        launcher.free()
        tma_launcher.free()
        cublas[str(n)]["after"] = benchmark.measure("cublas_gemm_fp16", n, n, n, settings)["gflops"] / 1e3
        ref = max(cublas[str(n)].values())
        for name, times in per_round.items():
            ms = statistics.median(times)
            tflops = 2.0 * n ** 3 / ms / 1e9
            finite = bool(np.isfinite(errors[name]))
            rows.append({"variant": name, "label": labels[name], "size": n, "ms": ms, "tflops": tflops,
                         "rounds_ms": times, "rel_error": errors[name] if finite else None,
                         "worst_error": worst[name] if finite else None,
                         "correct": finite and errors[name] <= pipelined.tolerance and worst[name] <= pipelined.tolerance})
            print(f"{n:>5}³ {labels[name]:38} {tflops:7.1f} TFLOP/s {100 * tflops / ref:5.1f}% of cuBLAS FP16 "
                  f"(rel error {errors[name]:.1e}, worst element {worst[name]:.1e})", flush=True)
        print(f"{n:>5}³ cuBLAS FP16 before/after: {cublas[str(n)]['before']:.1f} / {cublas[str(n)]['after']:.1f}", flush=True)
    out = {"format": FORMAT, "provenance": benchmark.provenance(status.info, settings), "params": params,
           "cublas_fp16_tflops": cublas, "rows": rows, "source": "tests/benchmarks/mma_costs.py",
           "date": dt.date.today().isoformat()}
    Path(args.out).write_text(json.dumps(out, indent=1, allow_nan=False))   # standard JSON: jq and browsers read it
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
