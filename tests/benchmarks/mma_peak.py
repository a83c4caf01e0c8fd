"""The tensor cores' ceilings on the GPU (run on the device): mma.sync.m16n8k16 from registers and
fed from shared memory by ldmatrix, wgmma.m64n256k16 from shared memory (tests/benchmarks/mma_peak.cu),
each over the warps per SM and independent accumulators that saturate it, beside cuBLAS FP16 at
4096^3 and 8192^3 (before and after: clocks drift). Prints TFLOP/s and each ceiling as a share of
cuBLAS FP16: the most any mma.sync kernel (mma_pipelined) can reach on this GPU, and what wgmma
leaves to a kernel. Also times the best of each on 128 SMs' worth of blocks against 132 (does
the rate scale with the SMs busy, or is the card at its power limit?), with the SM clock and power
that nvidia-smi reads during a long launch. Writes OUT.json (shipped in engine/bench/recorded/peak/).

    python3 tests/benchmarks/mma_peak.py OUT.json
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

FLOPS_MMA = 2 * 16 * 8 * 16          # one mma.sync.m16n8k16, per warp
FLOPS_WGMMA = 2 * 64 * 256 * 16      # one wgmma.m64n256k16, per warpgroup
TARGET_MS = 25.0                     # a launch long enough for the clocks to settle under load


def compile_cubin() -> Path:
    out = Path(tempfile.mkdtemp()) / "mma_peak.cubin"
    subprocess.run(["nvcc", "-cubin", "-gencode=arch=compute_90a,code=sm_90a", "-O3", f"-I{ROOT / 'cuda'}",
                    "-o", str(out), str(Path(__file__).with_suffix(".cu"))], check=True)
    return out


def smi() -> dict:
    """The SM clock, power draw and limit nvidia-smi reads now (empty where it cannot)."""
    q = "clocks.sm,clocks.max.sm,power.draw,power.limit,temperature.gpu"
    try:
        got = subprocess.run(["nvidia-smi", f"--query-gpu={q}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10).stdout.strip().split(", ")
        return dict(zip(["sm_mhz", "max_sm_mhz", "power_w", "power_limit_w", "temp_c"], map(float, got)))
    except (OSError, ValueError, subprocess.SubprocessError):
        return {}


def main() -> int:
    out_path = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/mma_peak.json")
    import pycuda.autoinit  # noqa: F401
    import pycuda.driver as cuda

    from engine.bench import timing
    from engine.kernels import registry

    dev = pycuda.autoinit.device
    sms = dev.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
    name = dev.name()
    module = cuda.module_from_file(str(compile_cubin()))
    rng = np.random.default_rng(21)
    # Random halves in [0, 1), as the rungs' inputs: enough words for the largest shared buffer.
    words = rng.random(2 * 200 * 1024).astype(np.float16).view(np.uint32)
    d_in = cuda.to_device(words)
    d_out = cuda.mem_alloc(4 * 1024 * 2048)

    def timed(fn, grid: int, block: int, shared: int, flops_per_iter: float, label: str) -> dict:
        f = module.get_function(fn)
        if shared > 48 * 1024:
            f.set_attribute(cuda.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared)

        def launch(iters: int) -> float:
            start, end = cuda.Event(), cuda.Event()
            start.record()
            f(d_in, d_out, np.int32(iters), grid=(grid, 1), block=(block, 1, 1), shared=shared)
            end.record()
            end.synchronize()
            return end.time_since(start)

        launch(64)
        ms = launch(2048)
        iters = max(64, int(2048 * TARGET_MS / ms))
        for _ in range(2):
            launch(iters)
        times = [launch(iters) for _ in range(8)]
        t = statistics.median(times)
        tflops = flops_per_iter * iters / (t * 1e-3) / 1e12
        row = {"config": label, "kernel": fn, "grid": grid, "block": block, "iters": iters, "ms": t,
               "tflops": tflops, "spread": (max(times) - min(times)) / t}
        print(f"   {label:44} {tflops:7.1f} TFLOP/s  ({t:.1f} ms, spread {100 * row['spread']:.1f}%)", flush=True)
        return row

    def under_load(fn, grid: int, block: int, shared: int, iters: int) -> dict:
        """nvidia-smi's reading 0.8 s into a launch that runs for about 2 s."""
        f = module.get_function(fn)
        f(d_in, d_out, np.int32(iters), grid=(grid, 1), block=(block, 1, 1), shared=shared)
        time.sleep(0.8)
        read = smi()
        cuda.Context.synchronize()
        return read

    n4, n8 = 4096, 8192
    a = {n: cuda.to_device(rng.random((n, n)).astype(np.float16)) for n in (n4, n8)}
    b = {n: cuda.to_device(rng.random((n, n)).astype(np.float16)) for n in (n4, n8)}
    c = cuda.mem_alloc(4 * n8 * n8)
    blas = timing.Cublas()

    def cublas(n: int, reps: int = 20) -> float:
        for _ in range(3):
            blas.gemm_ex(a[n], b[n], c, n, n, n, registry.Precision.FP16)
        times = []
        for _ in range(reps):
            start, end = cuda.Event(), cuda.Event()
            start.record()
            blas.gemm_ex(a[n], b[n], c, n, n, n, registry.Precision.FP16)
            end.record()
            end.synchronize()
            times.append(end.time_since(start))
        return 2.0 * n ** 3 / (statistics.median(times) * 1e-3) / 1e12

    print(f"GPU: {name}, {sms} SMs; idle: {smi()}", flush=True)
    before = {n: cublas(n) for n in (n4, n8)}
    print(f"cuBLAS FP16 before: 4096^3 {before[n4]:.1f}, 8192^3 {before[n8]:.1f} TFLOP/s", flush=True)
    rows = []
    print("mma.sync.m16n8k16 from registers (warps per SM x independent accumulators):", flush=True)
    for ilp in (4, 8, 16):
        for warps in (4, 8, 16, 32):
            if ilp == 16 and warps == 32:   # 96 registers a thread: 21 warps at most
                continue
            block = min(warps, 16) * 32
            grid = sms * (warps * 32 // block)
            rows.append(timed(f"mma_regs_{ilp}", grid, block, 0, grid * block / 32 * ilp * FLOPS_MMA,
                              f"mma_regs {warps} warps/SM x {ilp} acc"))
    print("mma.sync fed by ldmatrix.x4 from shared memory (warp tile, warps per SM):", flush=True)
    for wm, wn in ((64, 64), (64, 32), (32, 64)):
        for warps in (4, 8, 12, 16):
            if wm * wn == 64 * 64 and warps > 8:   # 198 registers a thread: 10 warps at most
                continue
            block = warps * 32 // (2 if warps >= 8 else 1)
            grid = sms * (warps * 32 // block)
            per_iter = grid * block / 32 * 4 * (wm // 16) * (wn // 8) * FLOPS_MMA   # 4 k steps an iteration
            rows.append(timed(f"mma_smem_{wm}x{wn}", grid, block, 0, per_iter, f"mma_smem {wm}x{wn} {warps} warps/SM"))
    print("wgmma.m64n256k16 from shared memory (2 warpgroups, 128 x 256 tile, ring of 4):", flush=True)
    ring = 4 * (128 * 64 * 2 + 64 * 256 * 2) + 1024
    rows.append(timed("wgmma_smem", sms, 256, ring, sms * 2 * 4 * FLOPS_WGMMA, f"wgmma_smem {sms} blocks"))
    # Does the rate follow the SMs busy? 128 blocks against all of them, for both instructions.
    best_mma = max((r for r in rows if r["kernel"].startswith("mma_regs")), key=lambda r: r["tflops"])
    per_block_mma = best_mma["tflops"] * 1e12 * best_mma["ms"] * 1e-3 / best_mma["iters"] / best_mma["grid"]
    scaling = {}
    for kern, row_grid, block, shared, per_block in (
            ("wgmma_smem", 128, 256, ring, 2 * 4 * FLOPS_WGMMA),
            (best_mma["kernel"], 128 * best_mma["grid"] // sms, best_mma["block"], 0, per_block_mma)):
        r = timed(kern, row_grid, block, shared, row_grid * per_block, f"{kern} {row_grid} blocks (128 SMs)")
        rows.append(r)
        full = (best_mma if kern == best_mma["kernel"] else next(x for x in rows if x["kernel"] == kern))["tflops"]
        scaling[kern] = {"tflops_128_sms": r["tflops"], f"tflops_{sms}_sms": full, "ratio": full / r["tflops"],
                         "ratio_if_linear": sms / 128}
    after = {n: cublas(n) for n in (n4, n8)}
    print(f"cuBLAS FP16 after: 4096^3 {after[n4]:.1f}, 8192^3 {after[n8]:.1f} TFLOP/s", flush=True)
    wg = next(r for r in rows if r["config"] == f"wgmma_smem {sms} blocks")
    load = {"wgmma_smem": under_load("wgmma_smem", sms, 256, ring, int(wg["iters"] * 2000 / wg["ms"])),
            "idle": smi()}
    ref4, ref8 = max(before[n4], after[n4]), max(before[n8], after[n8])
    best = {"mma_regs": max((r for r in rows if r["kernel"].startswith("mma_regs")), key=lambda r: r["tflops"]),
            "mma_smem": max((r for r in rows if r["kernel"].startswith("mma_smem")), key=lambda r: r["tflops"]),
            "wgmma_smem": max((r for r in rows if r["kernel"] == "wgmma_smem"), key=lambda r: r["tflops"])}
    print(f"== {name}: ceilings against cuBLAS FP16 (4096^3 {ref4:.1f}, 8192^3 {ref8:.1f} TFLOP/s, the better of before/after)")
    for what, r in best.items():
        print(f"   {what:11} {r['tflops']:7.1f} TFLOP/s  {100 * r['tflops'] / ref4:6.1f}% of cuBLAS FP16 at 4096^3  "
              f"{100 * r['tflops'] / ref8:6.1f}% at 8192^3   ({r['config']})")
    for kern, s in scaling.items():
        print(f"   {kern}: {sms} SMs / 128 SMs = {s['ratio']:.3f} (linear: {s['ratio_if_linear']:.3f})")
    print(f"   nvidia-smi during wgmma_smem: {load['wgmma_smem']}; idle after: {load['idle']}")
    doc = {"gpu": name, "sm_count": sms, "date": time.strftime("%Y-%m-%d"), "inputs": "random halves in [0, 1)",
           "cublas_fp16_tflops": {"4096": {"before": before[n4], "after": after[n4]},
                                  "8192": {"before": before[n8], "after": after[n8]}},
           "best": {k: {"tflops": r["tflops"], "config": r["config"], "pct_cublas_4096": 100 * r["tflops"] / ref4,
                        "pct_cublas_8192": 100 * r["tflops"] / ref8} for k, r in best.items()},
           "sm_scaling": scaling, "nvidia_smi": load, "rows": rows,
           "source": "tests/benchmarks/mma_peak.py (kernels: tests/benchmarks/mma_peak.cu)"}
    out_path.parent.mkdir(parents=True, exist_ok=True)
    out_path.write_text(json.dumps(doc, indent=1))
    print(f"wrote {out_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
