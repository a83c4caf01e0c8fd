"""What recorded runs say about the tensor-core instructions: the document's WMMA kernel diagnosed
(its errors, the warps its launch starts, its HMMA count against what the product needs) and, for the
kernels whose count of operations follows from their shape, how many tensor instructions one
operation is. Plain data for the Tensor cores page (drawn by engine/plots/tensor_figures.py); no
Streamlit here.

The recorded data it reads: engine/bench/recorded/fragments/seed_wmma_h200.json (the document
kernel's errors and times, from an H200) and Nsight Compute's counts of the tensor rungs
(engine/bench/recorded/ncu/, from tests/benchmarks/ncu_tensor.py on an H200; the engine's ncu tests
check against it too). Both folders sit apart from the recorded runs of kernels against sizes.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from engine.kernels import registry
from engine.kernels.problem import make_problem

RECORDED = Path(__file__).resolve().parents[2] / "engine" / "bench" / "recorded"
SEED = RECORDED / "fragments" / "seed_wmma_h200.json"
NCU = RECORDED / "ncu" / "ncu_tensor_h200.json"


def ncu_case(case: str) -> dict:
    """One kernel's Nsight Compute counts, e.g. ncu_case("mma_ldmatrix 128x128x128")."""
    return json.loads(NCU.read_text())["cases"][case]


def cublas_fp16_kernel() -> str:
    """The kernel cuBLAS ran for an FP16 product at 4096³ (its name says wgmma: sm90, gmma pipe)."""
    return json.loads(NCU.read_text())["torch_mm_fp16_4096"][0]["kernel_name"]


@dataclass(frozen=True)
class SeedEvidence:
    device: str
    table: pd.DataFrame      # one row per size
    hmma_seed: int           # ncu, at 128³
    hmma_warp: int
    hmma_needed: int         # (128/16)^3 WMMA multiplies, times the HMMA one takes (tensor_instructions)


def seed_warps(n: int) -> tuple[int, int]:
    """(warps the document's launch starts, output tiles) at n³, from the registry's launch geometry."""
    spec = registry.get("wmma_seed")
    p = registry.bind(spec, make_problem(n, n, n, block=spec.default_block))
    launch = spec.launches[-1]
    gx, gy = launch.grid(p)
    bx, by = launch.block(p)
    return gx * gy * bx * by // 32, (n // 16) ** 2


def seed_evidence() -> SeedEvidence:
    data = json.loads(SEED.read_text())
    rows = []
    for size, r in sorted(data["sizes"].items(), key=lambda kv: int(kv[0])):
        warps, tiles = seed_warps(int(size))
        rows.append({"M = N = K": int(size), "error vs A·B": r["error_vs_ab"],
                     "error vs A·(B, 16x16 blocks transposed)": r["error_vs_block_transposed_b"],
                     "warps launched": warps, "tiles of C": tiles, "warps per tile": warps // tiles,
                     "recorded warps": r["warps_launched"],
                     "time (ms)": r["ms"], "wmma_warp time (ms)": r["wmma_warp_ms"],
                     "slower by": r["ms"] / r["wmma_warp_ms"]})
    seed, warp = ncu_case("wmma_seed 128x128x128"), ncu_case("wmma_warp 128x128x128")
    per_wmma = int(tensor_instructions().loc["wmma_warp", "per operation, per warp"])
    return SeedEvidence(data["device"], pd.DataFrame(rows), int(seed["sm__inst_executed_pipe_tensor_op_hmma.sum"]),
                        int(warp["sm__inst_executed_pipe_tensor_op_hmma.sum"]), per_wmma * (128 // 16) ** 3)


# What the document says one operation is, and the kernels whose operations count it: each kernel's
# count of them follows from its shape alone (every warp, or warpgroup, steps through K by 16).
INSTRUCTION_CLAIMS = (
    ("wmma_warp", 128, "mma_sync … does a 16×16×16 matmul in one operation", "WMMA mma_sync, 16×16×16",
     lambda n: (n // 16) ** 3, 1),
    ("mma_ldmatrix", 128, "Hardware does 16×8×16 in one instruction", "mma.sync.m16n8k16",
     lambda n: (n // 16) * (n // 8) * (n // 16), 1),
    # Profiled with BN = 256: a warpgroup's instruction is 64 x 256 x 16, issued by its 4 warps.
    ("wgmma_tma", 256, "(Hopper's own instruction, not in the document)", "wgmma.m64n256k16, one per warpgroup",
     lambda n: (n // 64) * (n // 256) * (n // 16), 4),
)


def tensor_instructions() -> pd.DataFrame:
    """Per kernel of INSTRUCTION_CLAIMS: the operations its source issues at n³ (one warp's, or one
    warpgroup's, instruction), the warp-level tensor-pipe instructions Nsight Compute counted on the
    GPU (sm__inst_executed_pipe_tensor_op_hmma: wgmma counts there too, once per warp of the
    warpgroup), and so how many each operation is, per warp."""
    rows = []
    for kernel, n, claim, operation, count, warps in INSTRUCTION_CLAIMS:
        ops = count(n)
        counted = int(ncu_case(f"{kernel} {n}x{n}x{n}")["sm__inst_executed_pipe_tensor_op_hmma.sum"])
        rows.append({"kernel": kernel, "the document says": claim, "operation": operation, "at": f"{n}³",
                     "operations": ops, "tensor instructions (ncu)": counted,
                     "per operation, per warp": counted / (ops * warps)})
    return pd.DataFrame(rows).set_index("kernel")
