"""The tensor-core rungs on the GPU, in one run: the fragment maps (cuda/fragment_probe.cu), the
diagnosis of the document's WMMA kernel (what it computes, how long it takes beside the corrected
one), and every rung's result against float64 at square, non-square and overhanging sizes.

    python3 tests/benchmarks/tensor_device.py OUT_DIR

Writes OUT_DIR/fragments.json (the recorded maps, shipped as engine/bench/recorded/fragments/) and
OUT_DIR/seed_wmma.json (the evidence the Tensor cores page shows), and prints a table.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import numpy as np  # noqa: E402
import pycuda.autoinit  # noqa: E402,F401
import pycuda.driver as cuda  # noqa: E402

from engine.devices import gpu  # noqa: E402
from engine.kernels import build, reference, registry  # noqa: E402
from engine.kernels.problem import make_inputs, make_problem  # noqa: E402
from engine.metrics import tensor_evidence  # noqa: E402
from engine.tracing.plan import global_shapes, size_arguments  # noqa: E402


def probe() -> dict:
    rng = np.random.default_rng(7)
    ra = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    rb = rng.integers(-3, 4, (16, 16)).astype(np.float16)
    module = cuda.module_from_file(str(build.build_cubin("fragment_probe.cu", {}, traced=False)))
    out = np.zeros(2688, dtype=np.float32)
    module.get_function("fragment_probe")(cuda.In(ra), cuda.In(rb), cuda.Out(out), block=(32, 1, 1), grid=(1, 1))
    a64, b64 = ra.astype(np.float64), rb.astype(np.float64)
    return {"wmma_a": out[0:512].reshape(32, 16).astype(int).tolist(),
            "wmma_b_row": out[512:1024].reshape(32, 16).astype(int).tolist(),
            "wmma_b_col": out[1024:1536].reshape(32, 16).astype(int).tolist(),
            "wmma_c_stored": out[1536:1792].reshape(16, 16).astype(int).tolist(),
            "wmma_product_ok": bool(np.array_equal(out[1792:2048].reshape(16, 16), a64 @ b64)),
            "mma_a": out[2048:2304].reshape(32, 8).astype(int).tolist(),
            "mma_b": out[2304:2432].reshape(32, 4).astype(int).tolist(),
            "mma_c_code": out[2432:2560].reshape(32, 4).astype(int).tolist(),
            "mma_product": out[2560:2688].reshape(32, 4).tolist(),
            "mma_expected": (a64 @ b64[:, :8]).tolist()}


def run(kernel: str, m: int, n: int, k: int, params=None, reps: int = 0, inputs=make_inputs):
    """C of the kernel (and its median time over reps launches), with the float64 reference. inputs:
    A and B for the problem (the engine's make_inputs, uniform in [0, 1), unless asked)."""
    spec = registry.get(kernel)
    p = registry.bind(spec, make_problem(m, n, k, params=params or {}))
    a, b = inputs(p)
    launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), spec.inputs)
    try:
        launcher.upload({"A": a, "B": b})
        calls = launcher.launches(spec, p)
        for c in calls:
            c()
        cuda.Context.synchronize()
        c_out = launcher.download("C")
        times = []
        for _ in range(reps):
            start, end = cuda.Event(), cuda.Event()
            start.record()
            for c in calls:
                c()
            end.record()
            end.synchronize()
            times.append(end.time_since(start))
    finally:
        launcher.free()
    a16, b16 = a.astype(np.float16).astype(np.float64), b.astype(np.float16).astype(np.float64)
    return c_out, a16, b16, (float(np.median(times)) if times else None)


def block_transposed(b: np.ndarray) -> np.ndarray:
    """B with each 16 x 16 block transposed in place: what a col_major fragment of row-major B reads."""
    k, n = b.shape
    return b.reshape(k // 16, 16, n // 16, 16).transpose(0, 3, 2, 1).reshape(k, n)


def main() -> int:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/tensor")
    out.mkdir(parents=True, exist_ok=True)
    maps = probe()
    (out / "fragments.json").write_text(json.dumps(maps))
    print("fragment probe: wmma product exact:", maps["wmma_product_ok"], " mma product max error:",
          float(np.max(np.abs(np.array(maps["mma_product"]) - np.array(maps["mma_expected"])[
              np.array([[lane // 4 + 8 * (e // 2) for e in range(4)] for lane in range(32)]),
              np.array([[2 * (lane % 4) + e % 2 for e in range(4)] for lane in range(32)])]))), flush=True)

    seed = {}
    for size in (256, 1024, 2048):
        c, a, b, ms = run("wmma_as_written", size, size, size, reps=5)
        warp_c, _, _, warp_ms = run("wmma_warp", size, size, size, reps=5)
        # An error on inputs in [0, 1) says little (the wrong product has nearly the same sums): the
        # same kernel on zero-mean inputs too, each figure with the inputs it was measured on.
        zc, za, zb, _ = run("wmma_as_written", size, size, size, inputs=tensor_evidence.zero_mean_inputs)
        seed[size] = {"inputs": tensor_evidence.RECORDED_INPUTS, "error_vs_ab": reference.relative_error(c, a @ b),
                      "zero_mean_inputs": tensor_evidence.ZERO_MEAN_INPUTS,
                      "error_vs_ab_zero_mean": reference.relative_error(zc, za @ zb),
                      "error_vs_block_transposed_b": reference.relative_error(c, a @ block_transposed(b)),
                      "ms": ms, "wmma_warp_ms": warp_ms,
                      "wmma_warp_error": reference.relative_error(warp_c, a @ b),
                      "warps_launched": (size // 16) * 8 * 4 * (size // 16), "tiles": (size // 16) ** 2}
        print(f"seed {size}: {seed[size]}", flush=True)
    (out / "seed_wmma.json").write_text(json.dumps(seed))

    sizes = [(1024, 1024, 1024), (1040, 528, 272), (16, 16, 16), (4096, 1024, 2048), (208, 4096, 48)]
    for name in registry.TENSOR_RUNGS[1:]:
        spec = registry.get(name)
        for m, n, k in sizes:
            try:
                t = time.perf_counter()
                c, a, b, _ = run(name, m, n, k)
                err = reference.relative_error(c, a @ b)
                ok = err <= spec.tolerance and np.isfinite(c).all()
                print(f"{name:14} {m}x{n}x{k}: {'ok ' if ok else 'BAD'} rel error {err:.2e} "
                      f"({time.perf_counter() - t:.1f} s)", flush=True)
            except Exception as exc:  # noqa: BLE001 - a report, not a test
                print(f"{name:14} {m}x{n}x{k}: FAILED {type(exc).__name__}: {str(exc)[:300]}", flush=True)
    # wgmma's B descriptor: if the N-major offsets are the wrong way round, say which work.
    c, a, b, _ = run("wgmma_tma", 1024, 1024, 1024)
    if not reference.relative_error(c, a @ b) <= 5e-3:
        text = (Path(__file__).resolve().parents[2] / "cuda" / "wgmma_tma.cu").read_text()
        for lbo, sbo in ((1024, 8192), (8192, 1024), (16, 1024), (1024, 16), (8192, 16)):
            variant = out / f"wgmma_tma_{lbo}_{sbo}.cu"
            variant.write_text(f"#define BLBO {lbo}\n#define BSBO {sbo}\n" + text)
            spec = registry.get("wgmma_tma")
            p = registry.bind(spec, make_problem(1024, 1024, 1024))
            a, b = make_inputs(p)
            launcher = gpu.Launcher({}, global_shapes(p), size_arguments(p), spec.inputs)
            launcher.upload({"A": a, "B": b})
            for call in launcher.launches(spec, p, source_override=str(variant)):
                call()
            cuda.Context.synchronize()
            got = launcher.download("C")
            launcher.free()
            ref = a.astype(np.float16).astype(np.float64) @ b.astype(np.float16).astype(np.float64)
            print(f"wgmma variant LBO {lbo} SBO {sbo}: rel error {reference.relative_error(got, ref):.2e}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
