"""Issue 4's accuracy and speed figures, on the GPU machine. Prints its table; run on the device.

    python3 tests/benchmarks/bench_gpu.py
"""
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from engine.bench import benchmark  # noqa: E402
from engine.devices import gpu_client  # noqa: E402


# GFLOP/s measured earlier on an H200 (mean of 10 launches after one warm-up), at N=1024 and N=4096.
def _compile_time(params: dict) -> dict:
    """The FACTS' tile and pad as compile-time parameters (measure applies each to the kernels that take it)."""
    return {"TILE": params.get("tile", 16), "PAD": params.get("pad", 0)}


FACTS = [
    ("naive_x_rows", {"block": (16, 16)}, (486, 498)),
    ("naive_x_rows", {"block": (32, 32)}, (486, 498)),
    ("naive_x_cols", {"block": (32, 32)}, (6208, 5989)),
    ("naive_x_cols", {"block": (16, 16)}, (5171, 5140)),
    ("naive_transposed_b", {"block": (32, 32)}, (486, 498)),
    ("tiled_guarded", {"tile": 16}, (7765, 8124)),
    ("tiled_guarded", {"tile": 32}, (9104, 9005)),
    ("shared_bank_conflicts", {"tile": 16, "pad": 0}, (1963, 2039)),
    ("shared_bank_conflicts", {"tile": 16, "pad": 1}, (3567, 3688)),
    ("shared_bank_conflicts", {"tile": 32, "pad": 0}, (1217, 1239)),
    ("shared_bank_conflicts", {"tile": 32, "pad": 1}, (3682, 3749)),
    ("cublas_sgemm", {}, (37358, 51206)),
    ("cublas_sgemm_tf32", {}, (147040, 420436)),
]


def main():
    if "--cublas" in sys.argv:   # only the cuBLAS rows
        FACTS[:] = [f for f in FACTS if f[0].startswith("cublas")]
    st = gpu_client.status()
    print(f"device: {st.name}, peaks {benchmark.device_peaks(st.info)}")
    settings = benchmark.Settings(warmup=2, reps=30)
    start = time.perf_counter()
    benchmark.measure("naive_x_cols", 256, 256, 256, settings)
    print(f"first sweep point (naive_x_cols 256^3, builds cached or not): {time.perf_counter() - start:.2f} s "
          f"from request to result")
    print(f"\n{'kernel':24} {'params':22} {'N':>5} {'ours':>9} {'H200':>9} {'diff':>7} {'spread':>7}  run-to-run")
    for kernel, params, facts in FACTS:
        for n, fact in zip((1024, 4096), facts):
            runs = [benchmark.measure(kernel, n, n, n, settings, _compile_time(params),
                                      params.get("block")) for _ in range(2)]
            if any(r["status"] != "ok" for r in runs):
                print(f"{kernel:24} {str(params):22} {n:>5} {runs[0]['status']}: {runs[0].get('error')}")
                continue
            g = [r["gflops"] for r in runs]
            ours = statistics.mean(g)
            r2r = abs(g[0] - g[1]) / ours
            print(f"{kernel:24} {str(params):22} {n:>5} {ours:>9,.0f} {fact:>9,} {100 * (ours / fact - 1):>+6.1f}% "
                  f"{100 * runs[0]['spread']:>6.2f}%  {100 * r2r:.2f}%  clock {runs[0].get('sm_clock_mhz')} MHz, "
                  f"{runs[0].get('power_w', 0):.0f} W")
    print("\nwith the L2 flushed before every repetition (N=4096):")
    flushed = benchmark.Settings(warmup=2, reps=30, flush_l2=True)
    for kernel, params, _ in [f for f in FACTS if f[0] in ("naive_x_cols", "tiled_guarded", "cublas_sgemm")][:3]:
        r = benchmark.measure(kernel, 4096, 4096, 4096, flushed, _compile_time(params),
                              params.get("block"))
        print(f"  {kernel:24} {str(params):22} {r['gflops']:>9,.0f} GFLOP/s  spread {100 * r['spread']:.2f}%")
    print("\nrun-to-run spread at N >= 2048 (two full measurements of each point, |a-b|/mean):")
    for kernel, params, _ in FACTS[::3] + [FACTS[-1]]:
        runs = [benchmark.measure(kernel, 2048, 2048, 2048, settings, _compile_time(params),
                                  params.get("block")) for _ in range(2)]
        g = [r["gflops"] for r in runs]
        print(f"  {kernel:24} {str(params):22} 2048: {100 * abs(g[0] - g[1]) / statistics.mean(g):.2f}%  "
              f"(IQR/median within a run {100 * runs[0]['spread']:.2f}%)")
    gpu_client.shutdown()


if __name__ == "__main__":
    main()
