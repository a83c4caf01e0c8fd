"""Benchmark exports made up in tests (format 2, as `python -m engine bench` writes them): rows of any
kernel at any size with the GFLOP/s a test chooses, so what the pages compute from them can be
checked against numbers the test knows."""
from __future__ import annotations

import json

from engine.bench import schema
from engine.kernels import registry
from engine.plots import charts

PEAKS = {"fp32_gflops": 66908.16, "bandwidth_gbs": 4814.304, "tf32_gflops_datasheet": 495000.0}


def row(kernel: str, m: int, n: int, k: int, gflops: float | None, params: dict | None = None,
        block: str | None = None, clock: float = 1980) -> dict:
    """One row as measured: timed at `gflops` (median from it), or an error row where gflops is None."""
    spec = registry.get(kernel)
    out = {"kernel": kernel, "title": spec.title, "precision": str(spec.precision), "m": m, "n": n, "k": k,
           "params": {**spec.default_params(), **(params or {})},
           "block": block or ("x".join(map(str, spec.default_block)) if spec.block_shapes else None)}
    if gflops is None:
        return {**out, "status": "error", "error": "made up: not timed"}
    flops, traffic = 2.0 * m * n * k, 4.0 * (m * k + k * n + m * n)
    return {**out, "status": "ok", "rel_error": 1e-7, "reps": 20, "sm_clock_mhz": clock,
            "median_ms": flops / gflops / 1e6, "gflops": gflops, "intensity": flops / traffic}


def document(rows: list[dict], gpu: str = "NVIDIA H200", date: str = "2026-11-22T10:00:00+00:00", **prov) -> str:
    """An export of `rows` as JSON, with a provenance like a real one's (more fields from prov)."""
    return json.dumps(schema.to_document(rows, {"gpu": gpu, "date": date, "peaks": PEAKS,
                                                "settings": {"warmup": 2, "reps": 20, "flush_l2": False}, **prov}))


N = 4096
WARP = {"BM": 128, "BN": 128, "BK": 16, "WM": 64, "WN": 64, "WNITER": 4, "TM": 8, "TN": 4}   # a warptile, not its default

# A run with the kernels the documents' figures are compared with: at 4096³ (the A100 table's) and at
# 4096x4096x128 (the V100 headline's), where the padded TILE 32 kernel is the document's fastest.
SQUARE = [row("naive_x_cols", N, N, N, 6000.0, block="32x32"),
          row("naive_x_cols", N, N, N, 5000.0, block="16x16"),
          row("tiled_guarded", N, N, N, 9000.0, {"TILE": 32}),
          row("tiled_guarded", N, N, N, 8000.0, {"TILE": 16}),
          row("cublas_sgemm", N, N, N, 50000.0),
          row("cublas_sgemm_tf32", N, N, N, 400000.0),
          row("cublas_gemm_fp16", N, N, N, 700000.0),
          row("tiled_guarded", 1024, 1024, 1024, 7000.0, {"TILE": 16})]
SKINNY = [row("naive_transposed_b", N, N, 128, 500.0, block="32x32"),
          *(row("shared_bank_conflicts", N, N, 128, 1000.0 * (t // 16) * (1 + 2 * p), {"TILE": t, "PAD": p})
            for t in (16, 32) for p in (0, 1)),
          row("blocktile_2d", N, N, 128, 20000.0),
          row("warptile", N, N, 128, 25000.0, WARP),
          row("warptile", N, N, 128, None, {**WARP, "WNITER": 2}),
          row("cublas_sgemm", N, N, 128, 40000.0)]


# cuBLAS FP16 at sizes around 4096 (its 4096³ row, 700 TFLOP/s, is SQUARE's), TFLOP/s by size: the
# sizes not divisible by 8 slower (a median of 460 against 700), multiples of 16 as fast as multiples
# of 8 only (715 against 695: within 5%); torch.mm at 99% of it at each size but 4095³ (not timed).
AROUND_4096 = {4088: 700, 4092: 500, 4095: 400, 4097: 420, 4100: 520, 4104: 690, 4112: 730}
DIVISIBLE = [*(row("cublas_gemm_fp16", n, n, n, 1000.0 * t) for n, t in AROUND_4096.items()),
             *(row("torch_mm_fp16", n, n, n, 990.0 * t) for n, t in {**AROUND_4096, N: 700}.items() if n != 4095)]


# An autotuning sweep around the registry's defaults (whatever they are): blocktile_1d's default
# loses to a configuration with BM changed; warptile's wins; double_buffered's was not timed (an error
# row); cuBLAS alongside; and a row at another size, not ranked.
DEFAULT_1D = registry.get("blocktile_1d").default_params()
DEFAULT_WARP = registry.get("warptile").default_params()
DEFAULT_DOUBLE = registry.get("double_buffered").default_params()
WIN_1D = {**DEFAULT_1D, "BM": 256 if DEFAULT_1D["BM"] != 256 else 128}
SLOW_1D = {**DEFAULT_1D, "TM": 4 if DEFAULT_1D["TM"] != 4 else 8}
OTHER_WARP = {**DEFAULT_WARP, "WNITER": 1 if DEFAULT_WARP["WNITER"] != 1 else 2}
WIN_DOUBLE = {**DEFAULT_DOUBLE, "WN": 64 if DEFAULT_DOUBLE["WN"] != 64 else 32}


def label(kernel: str, params: dict) -> str:
    return charts.label({"kernel": kernel, "params": params})


def sweep_rows() -> list[dict]:
    return [row("blocktile_1d", N, N, N, 9000.0, DEFAULT_1D),
            row("blocktile_1d", N, N, N, 12000.0, WIN_1D),
            row("blocktile_1d", N, N, N, 6000.0, SLOW_1D),
            row("blocktile_1d", 1024, 1024, 1024, 99000.0, SLOW_1D),
            row("warptile", N, N, N, 30000.0, DEFAULT_WARP),
            row("warptile", N, N, N, 28000.0, OTHER_WARP),
            row("double_buffered", N, N, N, None, DEFAULT_DOUBLE),
            row("double_buffered", N, N, N, 31000.0, WIN_DOUBLE),
            row("cublas_sgemm", N, N, N, 50000.0)]
