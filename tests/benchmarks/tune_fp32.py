"""The FP32 top rung against cuBLAS SGEMM at the large square sizes, outside the engine: one process,
one CUDA context, the kernels built straight from their .cu with nvcc (all in parallel) and launched
through PyCUDA, cuBLAS SGEMM (engine.bench.timing.Cublas) timed between them on the same buffers, so
a clock that drifts with the card's heat moves both. Two stages: every configuration at the first
size with few repetitions, then the best (and the rung's default) at every size with more, each
checked against float64 on sampled rows of C (and all of C for NaN) before it is timed. Prints each
stage's table and writes it as JSON lines.

    python3 tests/benchmarks/tune_fp32.py OUT_DIR [--sizes 4096,8192] [--stage-one rung|knobs|tiles] [--top N]
    python3 tests/benchmarks/tune_fp32.py --launch "RUNG=1" --size 4096   # one launch of it and of cuBLAS: ncu's target

GPU only. A configuration is a set of -D values for the source; the grid and block follow the
prefetched kernel's contract (BM x BN tiles, (BM / WM) x (BN / WN) warps). RUNG=1 builds the rung
itself (cuda/prefetched.cu), any other configuration tests/benchmarks/fp32_variants/prefetched_x.cu
(its knobs are in its header). --stage-one picks the first stage: "rung" (default) the rung at the
best tiles beside the variant whose FMA rows all run left to right (ORDER=0), "knobs" the tiles times
BK and ORDER, "tiles" every tile of 64 or 128 outputs a thread at BK 8 and 16, one or two blocks an SM.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
SOURCE = ROOT / "tests" / "benchmarks" / "fp32_variants" / "prefetched_x.cu"
from engine.kernels import registry  # noqa: E402

SPEC = registry.get("prefetched")
DEFAULT = SPEC.default_params()


def threads(c: dict) -> int:
    return (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32


def legal(c: dict) -> bool:
    """The prefetched kernel's own rules (its REQUIREs, as the registry reads them), so nvcc is asked
    only for configurations it builds; the variants' knobs (ORDER, MINB) are not the rung's."""
    return SPEC.accepts({name: c[name] for name in SPEC.params})


def tiles() -> list[dict]:
    """Block and warp tiles worth timing: 128 or 256 threads, 64 or 128 outputs a thread, tiles of 128 x 128 or more."""
    out = []
    for bm, bn, wm, wn, wni, tm, tn in itertools.product((128, 256), (128, 256), (32, 64, 128), (32, 64, 128),
                                                         (1, 2, 4), (4, 8), (4, 8)):
        c = {"BM": bm, "BN": bn, "BK": 8, "WM": wm, "WN": wn, "WNITER": wni, "TM": tm, "TN": tn}
        if threads(c) in (128, 256) and wm * wn // 32 in (64, 128) and legal(c) and bm * bn <= 256 * 128:
            out.append(c)
    return out


def stage_one() -> list[dict]:
    """Every tile at BK 8 and 16, two blocks an SM where a thread's 64 outputs leave room for it (128
    registers), and the FMA order knob at the default tile."""
    out = []
    for t in tiles():
        outputs = t["WM"] * t["WN"] // 32
        for bk, minb in itertools.product((8, 16), (1, 2)):
            if minb == 2 and (outputs > 64 or threads(t) != 256):
                continue
            if bk == 8 and t["BM"] == t["BN"]:   # a short K step for the small tiles: twice the barriers
                continue
            c = {**t, "BK": bk, "MINB": minb}
            if legal(c):
                out.append(c)
    for order in (1, 2):
        out.append({**DEFAULT, "ORDER": order})
    return out


# The six best tiles of the first sweep (H200, 4096^3: 45.7 to 46.0 TFLOP/s, 90% of cuBLAS SGEMM).
TOP_TILES = ({"BM": 128, "BN": 256, "WM": 32, "WN": 128, "WNITER": 2, "TM": 8, "TN": 4},
             {"BM": 128, "BN": 256, "WM": 32, "WN": 128, "WNITER": 2, "TM": 4, "TN": 4},
             {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "WNITER": 2, "TM": 4, "TN": 4},
             {"BM": 128, "BN": 256, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4},
             {"BM": 128, "BN": 256, "WM": 128, "WN": 32, "WNITER": 2, "TM": 8, "TN": 4},
             {"BM": 256, "BN": 128, "WM": 64, "WN": 64, "WNITER": 2, "TM": 8, "TN": 4})


def stage_knobs() -> list[dict]:
    """The top tiles at BK 8 and 16, in each order of the FMAs (ORDER)."""
    out = []
    for t in TOP_TILES:
        for bk, order in itertools.product((8, 16), (0, 1, 2)):
            c = {**t, "BK": bk, "ORDER": order}
            if legal(c):
                out.append(c)
    return out


def stage_rung() -> list[dict]:
    """The rung as committed (RUNG=1: cuda/prefetched.cu) at the top tiles, beside the variant at its
    default tiles whose FMA rows all run left to right (ORDER=0): what the back-and-forth rows buy."""
    return [{**t, "BK": 16, "RUNG": 1} for t in TOP_TILES] + [{**DEFAULT, "ORDER": 0}]


def key(c: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in c.items())


def compile_all(source: Path, configs: list[dict], folder: Path) -> dict[str, Path | str]:
    def one(c: dict) -> tuple[str, Path | str]:
        out = folder / f"k{abs(hash(key(c)))}.cubin"
        # RUNG=1: the rung's own source (cuda/prefetched.cu), the baseline the variants are held to.
        src = ROOT / "cuda" / "prefetched.cu" if c.get("RUNG") else source
        cmd = ["nvcc", "-cubin", "-arch=sm_90", "-O3", *(f"-D{k}={v}" for k, v in c.items()),
               f"-I{ROOT / 'cuda'}", "-o", str(out), str(src), "-Xptxas", "-v"]
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode:
            return key(c), r.stderr.strip().splitlines()[-1] if r.stderr else "nvcc failed"
        regs = [line for line in r.stderr.splitlines() if "registers" in line]
        (folder / (out.name + ".regs")).write_text(regs[-1] if regs else "")
        return key(c), out
    with ThreadPoolExecutor(os.cpu_count() or 4) as pool:
        return dict(pool.map(one, configs))


class Bench:
    def __init__(self):
        import pycuda.autoinit  # noqa: F401, PLC0415 - the GPU's context, before cuBLAS takes it
        import pycuda.driver as drv  # noqa: PLC0415

        from engine.bench.timing import Cublas, telemetry  # noqa: PLC0415
        self.drv, self.cublas, self.telemetry = drv, Cublas(), telemetry
        self.buffers = {}

    def problem(self, m: int, n: int, k: int):
        if (m, n, k) not in self.buffers:
            self.buffers.clear()
            rng = np.random.default_rng(0)
            a = rng.standard_normal((m, k), dtype=np.float32)
            b = rng.standard_normal((k, n), dtype=np.float32)
            rows = np.unique(np.r_[rng.integers(0, m, 96), 0, m - 1])
            ref = a[rows].astype(np.float64) @ b.astype(np.float64)
            da, db, dc = self.drv.to_device(a), self.drv.to_device(b), self.drv.mem_alloc(4 * m * n)
            self.buffers[(m, n, k)] = (da, db, dc, rows, ref, np.sqrt(k))
        return self.buffers[(m, n, k)]

    def check(self, m: int, n: int, k: int) -> float:
        da, db, dc, rows, ref, scale = self.problem(m, n, k)
        c = np.empty((m, n), np.float32)
        self.drv.memcpy_dtoh(c, dc)
        if not np.isfinite(c).all():
            return float("inf")
        return float(np.abs(c[rows] - ref).max() / scale)

    def launcher(self, cubin: Path, c: dict, m: int, n: int, k: int):
        mod = self.drv.module_from_file(str(cubin))
        fn = mod.get_function("prefetched")
        da, db, dc, *_ = self.problem(m, n, k)
        grid = (-(-n // c["BN"]), -(-m // c["BM"]), 1)
        args = (da, db, dc, np.int32(m), np.int32(n), np.int32(k))
        return lambda: fn(*args, block=(threads(c), 1, 1), grid=grid), mod

    def cublas_launcher(self, m: int, n: int, k: int):
        da, db, dc, *_ = self.problem(m, n, k)
        return lambda: self.cublas.sgemm(int(da), int(db), int(dc), m, n, k, tf32=False)

    def time(self, launch, reps: int) -> float:
        """Median ms of reps launches, each between its own events, after two warm-up launches."""
        launch()
        launch()
        times = []
        for _ in range(reps):
            start, end = self.drv.Event(), self.drv.Event()
            start.record()
            launch()
            end.record()
            end.synchronize()
            times.append(end.time_since(start))
        return statistics.median(times)


def run_stage(bench: Bench, built: dict, configs: list[dict], sizes, reps: int, log) -> list[dict]:
    rows = []
    for m, n, k in sizes:
        first = len(rows)   # this size's rows start here: only they go to the log below
        flops = 2.0 * m * n * k
        cub = bench.cublas_launcher(m, n, k)
        ref_ms = [bench.time(cub, reps)]
        for i, c in enumerate(configs):
            cubin = built.get(key(c))
            row = {"size": f"{m}x{n}x{k}", "config": c}
            if not isinstance(cubin, Path):
                rows.append({**row, "status": f"build: {cubin}"})
                continue
            row["regs"] = (cubin.parent / (cubin.name + ".regs")).read_text().split("Used ")[-1].split(",")[0]
            try:
                launch, _mod = bench.launcher(cubin, c, m, n, k)
                launch()
                bench.drv.Context.synchronize()
                err = bench.check(m, n, k)
                if err > 1e-4:
                    rows.append({**row, "status": f"wrong: error {err:.1e}"})
                    continue
                ms = bench.time(launch, reps)
            except Exception as exc:   # a launch that fails is a row, the sweep goes on
                rows.append({**row, "status": f"launch: {exc}"})
                continue
            if i % 8 == 7:   # cuBLAS every few configurations: the clock drifts as the card warms
                ref_ms.append(bench.time(cub, reps))
            near = min(ref_ms[-2:])
            rows.append({**row, "status": "ok", "ms": ms, "tflops": flops / ms / 1e9, "cublas_ms": near,
                         "cublas_tflops": flops / near / 1e9, "pct": 100 * near / ms, **bench.telemetry()})
        ref_ms.append(bench.time(cub, reps))
        ok = sorted((r for r in rows if r["size"] == f"{m}x{n}x{k}" and r["status"] == "ok"), key=lambda r: r["ms"])
        print(f"== {m}x{n}x{k}: cuBLAS SGEMM " + ", ".join(f"{flops / t / 1e9:.1f}" for t in ref_ms) +
              f" TFLOP/s; {len(ok)} configurations ok of {len(configs)}", flush=True)
        for r in ok[:15]:
            print(f"  {r['tflops']:6.2f} TF {r['pct']:5.1f}% (cuBLAS {r['cublas_tflops']:.1f})  regs {r['regs']:>4}  "
                  f"{key(r['config'])}{'  (the rung as it is)' if r['config'].get('RUNG') else ''}", flush=True)
        for r in rows[first:]:
            log.write(json.dumps(r) + "\n")
    return rows


def parse(text: str) -> dict:
    return {k: int(v) for k, v in (kv.split("=") for kv in text.split(",") if kv)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--sizes", default="4096,8192")
    ap.add_argument("--source", default=str(SOURCE))
    ap.add_argument("--top", type=int, default=12)
    ap.add_argument("--configs", default="", help="configurations for stage two besides stage one's best, ';'-separated")
    ap.add_argument("--launch", default=None, help="one launch of this configuration and one of cuBLAS (ncu's target)")
    ap.add_argument("--size", type=int, default=4096)
    ap.add_argument("--stage-one", choices=("tiles", "knobs", "rung"), default="rung")
    args = ap.parse_args()
    source = Path(args.source).resolve()
    folder = Path(tempfile.mkdtemp(prefix="tune-fp32-"))
    if args.launch is not None:
        c = {**DEFAULT, **parse(args.launch)}
        built = compile_all(source, [c], folder)
        bench = Bench()
        launch, _mod = bench.launcher(built[key(c)], c, args.size, args.size, args.size)
        launch()
        bench.cublas_launcher(args.size, args.size, args.size)()
        bench.drv.Context.synchronize()
        print(f"launched {key(c)} and cuBLAS SGEMM at {args.size}^3: error {bench.check(args.size, args.size, args.size):.1e}")
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    sizes = [(s, s, s) for s in map(int, args.sizes.split(","))]
    first = {"tiles": stage_one, "knobs": stage_knobs, "rung": stage_rung}[args.stage_one]()
    rung = {**DEFAULT, "RUNG": 1}
    extra = [{**DEFAULT, **parse(t)} for t in args.configs.split(";") if t]
    start = time.perf_counter()
    built = compile_all(source, [rung, DEFAULT, *first, *extra], folder)
    print(f"built {sum(isinstance(v, Path) for v in built.values())} of {len(built)} in "
          f"{time.perf_counter() - start:.0f} s", flush=True)
    bench = Bench()
    with open(out / "stage1.jsonl", "w") as log:
        rows = run_stage(bench, built, first, sizes[:1], 5, log)
    ok = sorted((r for r in rows if r["status"] == "ok"), key=lambda r: -r["tflops"])
    (out / "best.txt").write_text(key(ok[0]["config"]) if ok else "")
    second = [rung] + [r["config"] for r in ok[:args.top] if r["config"] != rung] + extra
    with open(out / "stage2.jsonl", "w") as log:
        run_stage(bench, built, second, sizes, 15, log)
    print(f"done in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
