"""The Tensor cores page's data, plain (no Streamlit): the evidence against the document's WMMA kernel,
the tile hierarchy of each tensor rung from its registry defaults, the fragment maps recorded on the
GPU against the PTX ISA's documented layouts, ldmatrix's row addresses and banks without and with the
swizzle, and the rungs' speeds.

The recorded data it reads: engine/bench/recorded/fragments/ (cuda/fragment_probe.cu's output and the
document kernel's errors and times, both from an H200) and Nsight Compute's counts of the tensor
rungs (engine/bench/recorded/ncu/, from tests/benchmarks/ncu_tensor.py on an H200; the engine's ncu
tests check against it too). Both folders sit apart from the recorded runs of kernels against sizes.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.bench import benchmark
from engine.kernels import registry
from engine.kernels.problem import make_problem
from engine.metrics import fragments

ROOT = Path(__file__).resolve().parents[2]
FRAGMENTS = ROOT / "engine" / "bench" / "recorded" / "fragments"
NCU = ROOT / "engine" / "bench" / "recorded" / "ncu" / "ncu_tensor_h200.json"
CUBLAS_FP16 = "cuBLAS FP16 (torch.mm)"


def _json(path: Path) -> dict:
    return json.loads(path.read_text())


def ncu_case(case: str) -> dict:
    """One kernel's Nsight Compute counts, e.g. ncu_case("mma_ldmatrix 128x128x128")."""
    return _json(NCU)["cases"][case]


def cublas_fp16_kernel() -> str:
    """The kernel cuBLAS ran for an FP16 product at 4096³ (its name says wgmma: sm90, gmma pipe)."""
    return _json(NCU)["torch_mm_fp16_4096"][0]["kernel_name"]


# --------------------------------------------------------------------------- 1. the document's kernel

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
    data = _json(FRAGMENTS / "seed_wmma_h200.json")
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


# --------------------------------------------------------------------------- 2. the hierarchy

@dataclass(frozen=True)
class Hierarchy:
    rung: str
    block: tuple[int, int]          # BM x BN of C one block computes
    warp: tuple[int, int]           # WM x WN one warp (or warpgroup) computes
    mma: tuple[int, int, int]       # M x N x K of one instruction
    unit: str                       # "warp" or "warpgroup"
    instruction: str
    threads: int


@functools.cache   # the shipped sweeps do not change while the server runs; read them once, not per rerun
def swept(rung: str) -> bool:
    """Whether a recorded autotuning sweep (engine/bench/recorded/tuning/) timed this rung's configurations."""
    return bool(benchmark.tuning_runs(holding=[rung]))


def hierarchy(rung: str) -> Hierarchy:
    """The tiles of the rung with its registry defaults, from the block down to one instruction."""
    spec = registry.get(rung)
    q = {**{k: v[0] for k, v in spec.params.items()}, **spec.defaults}
    p = registry.bind(spec, make_problem(1024, 1024, 1024, block=spec.default_block, params=dict(q)))
    bx, by = spec.launches[-1].block(p)
    if rung == "wgmma_tma":
        return Hierarchy(rung, (q["BM"], q["BN"]), (64, q["BN"]), (64, q["BN"], 16), "consumer warpgroup",
                         f"wgmma.m64n{q['BN']}k16", bx * by)
    if rung in ("wmma_seed", "wmma_warp"):
        return Hierarchy(rung, (16, 64) if rung == "wmma_warp" else (16, 16), (16, 16), (16, 16, 16), "warp",
                         "wmma m16n16k16 (2 × HMMA.16816)", bx * by)
    wmma = rung == "wmma_block"
    return Hierarchy(rung, (q["BM"], q["BN"]), (q["WM"], q["WN"]), (16, 16, 16) if wmma else (16, 8, 16), "warp",
                     "wmma m16n16k16 (2 × HMMA.16816)" if wmma else "mma.sync.m16n8k16", bx * by)


# --------------------------------------------------------------------------- 3. fragment maps

@dataclass(frozen=True)
class Operand:
    key: str
    label: str
    shape: tuple[int, int]      # rows x cols of the tile drawn
    documented: bool            # the PTX ISA documents the layout


OPERANDS = {
    "mma_a": Operand("mma_a", "mma.sync A (16 × 16, via ldmatrix.x4)", (16, 16), True),
    "mma_b": Operand("mma_b", "mma.sync B (16 × 8, via ldmatrix.x2.trans)", (16, 8), True),
    "mma_c": Operand("mma_c", "mma.sync C/D accumulator (16 × 8)", (16, 8), True),
    "wmma_a": Operand("wmma_a", "WMMA matrix_a (16 × 16, row_major)", (16, 16), False),
    "wmma_b": Operand("wmma_b", "WMMA matrix_b (16 × 16, row_major)", (16, 16), False),
    "wmma_c": Operand("wmma_c", "WMMA accumulator (16 × 16)", (16, 16), False),
}


def recorded_map(operand: str) -> np.ndarray:
    """(32 lanes, elements, 2) -> (row, col) each lane held, as the GPU recorded it."""
    d = _json(FRAGMENTS / "h200.json")
    if operand == "mma_a":
        idx = np.array(d["mma_a"])
        return np.stack([idx // 16, idx % 16], -1)
    if operand == "mma_b":
        idx = np.array(d["mma_b"])
        return np.stack([idx // 8, idx % 8], -1)
    if operand == "mma_c":
        idx = np.array(d["mma_c_code"])
        return np.stack([idx // 16, idx % 16], -1)
    if operand in ("wmma_a", "wmma_b"):
        idx = np.array(d["wmma_a" if operand == "wmma_a" else "wmma_b_row"])
        return np.stack([idx // 16, idx % 16], -1)
    stored = np.array(d["wmma_c_stored"])     # [row][col] = lane * 8 + e
    out = np.zeros((32, 8, 2), int)
    for r in range(16):
        for c in range(16):
            lane, e = divmod(int(stored[r, c]), 8)
            out[lane, e] = (r, c)
    return out


def matches_ptx(operand: str) -> bool | None:
    """Whether the recorded map is the PTX ISA's (engine/metrics/fragments.py), element for element; None
    where none is documented."""
    if not OPERANDS[operand].documented:
        return None
    return bool(np.array_equal(recorded_map(operand), fragments.ptx_mma_m16n8k16(operand[-1])))


def owners(operand: str) -> np.ndarray:
    """(rows, cols) -> the lanes holding that element, as text ("0" or "0,4" where lanes share it)."""
    rows, cols = OPERANDS[operand].shape
    held = [[[] for _ in range(cols)] for _ in range(rows)]
    for lane, elems in enumerate(recorded_map(operand)):
        for r, c in elems:
            if lane not in held[r][c]:
                held[r][c].append(lane)
    return np.array([[",".join(map(str, h)) for h in row] for row in held], dtype=object)


# --------------------------------------------------------------------------- 4. ldmatrix banks

BANKS, BANK_BYTES, HALF = 32, 4, 2


def _swizzle_a(r: int, c: int) -> int:
    return ((c // 8) ^ ((r // 2) % 4)) * 8


def _swizzle_b(r: int, c: int) -> int:
    return ((c // 8) ^ (r % 8)) * 8


@dataclass(frozen=True)
class LdmatrixRows:
    """One ldmatrix.x4 of a warp: the 32 row addresses its lanes name (lane 8m + j: row j of matrix m)."""
    kernel: str
    operand: str
    rows: np.ndarray        # (32,) the tile row each lane names
    cols: np.ndarray        # (32,) the element column it is stored at
    byte: np.ndarray        # (32,) shared byte offset in the tile
    bank: np.ndarray        # (32,) first of the 4 banks the 16 bytes fill

    def wavefronts(self) -> list[int]:
        """Per matrix: the most 16-byte rows that fall on one bank group (1 when all 8 differ)."""
        return [int(np.bincount(self.bank[8 * m: 8 * m + 8] // 4, minlength=8).max()) for m in range(4)]


def ldmatrix_rows(kernel: str, operand: str = "A", kk: int = 0, first: int = 0) -> LdmatrixRows:
    """The addresses of warp 0's first ldmatrix.x4 of A (rows `first`..+16 of As) or of B (columns
    `first`..+16 of Bs), at k step kk, from the kernels' index arithmetic (cuda/mma_ldmatrix.cu,
    mma_swizzled.cu): As is BM x 32 halves (64-byte rows), Bs 32 x BN."""
    spec = registry.get(kernel)
    bn = {**spec.defaults}["BN"]
    lane = np.arange(32)
    swz = kernel != "mma_ldmatrix"
    if operand == "A":
        r, c = first + lane % 16, kk + lane // 16 * 8
        c = np.array([_swizzle_a(a, b) for a, b in zip(r, c)]) if swz else c
        byte = r * registry.TENSOR_K * HALF + c * HALF
    else:
        r, c = kk + lane % 16, first + lane // 16 * 8
        c = np.array([_swizzle_b(a, b) for a, b in zip(r, c)]) if swz else c
        byte = r * bn * HALF + c * HALF
    return LdmatrixRows(kernel, operand, r, c, byte, (byte // BANK_BYTES) % BANKS)


def ldmatrix_wavefronts_at(kernel: str, size: int = 128) -> int:
    """The ldmatrix wavefronts of the whole kernel at size³ (one block of the defaults), counted from
    ldmatrix_rows as the kernel issues them: per warp and K step of 16, WM/16 x4's of A and WN/16 of B."""
    q = registry.get(kernel).defaults
    warps = (q["BM"] // q["WM"]) * (q["BN"] // q["WN"])
    blocks = (size // q["BM"]) * (size // q["BN"])
    per_step = 0
    for warp in range(warps):
        wrow, wcol = warp // (q["BN"] // q["WN"]) * q["WM"], warp % (q["BN"] // q["WN"]) * q["WN"]
        for kk in (0, 16):
            per_step += sum(sum(ldmatrix_rows(kernel, "A", kk, wrow + 16 * i).wavefronts()) for i in range(q["WM"] // 16))
            per_step += sum(sum(ldmatrix_rows(kernel, "B", kk, wcol + 16 * j).wavefronts()) for j in range(q["WN"] // 16))
    return blocks * per_step * (size // registry.TENSOR_K)


def ncu_wavefronts(kernel: str) -> tuple[int, int, int]:
    """(ldmatrix wavefronts, bank conflicts, ldmatrix instructions) Nsight Compute measured at 128³."""
    c = ncu_case(f"{kernel} 128x128x128")
    return (int(c["sm__sass_l1tex_data_pipe_lsu_wavefronts_mem_shared_op_ldsm.sum"]),
            int(c["sm__sass_l1tex_data_bank_conflicts_pipe_lsu_mem_shared_op_ldsm.sum"]),
            int(c["smsp__inst_executed_op_ldsm.sum"]))


# --------------------------------------------------------------------------- 5. speeds

# What the rungs are measured against, in this order after them: the same product on cuBLAS's tensor
# cores (FP16 and BF16 in, FP32 sums), PyTorch's call of it, and FP32 cuBLAS with and without TF32.
BASELINES = ("cublas_gemm_fp16", "cublas_gemm_bf16", "torch_mm_fp16", "cublas_sgemm_tf32", "cublas_sgemm")
REFERENCE = "cublas_gemm_fp16"   # the product the rungs compute: the % column reads against it


@dataclass(frozen=True)
class TensorSpeeds:
    """Each tensor rung's and baseline's TFLOP/s at one square size of one run."""
    bars: pd.DataFrame      # kernel, title, tflops, pct (of cuBLAS FP16; NaN if it was not timed), params
    label: str              # what the numbers are: "recorded NVIDIA H200 run of ..." or "live on ..."
    size: int
    missing: list[str]      # tensor rungs the run has no row for at this size
    failed: dict[str, str]  # kernel -> why its row is not a time (wrong result, refused size, ...)


def square_sizes(df: pd.DataFrame) -> list[int]:
    """The N of the N x N x N sizes at which a tensor rung has a row, ascending."""
    mine = df[df["kernel"].isin(registry.TENSOR_RUNGS) & (df["m"] == df["n"]) & (df["n"] == df["k"])]
    return sorted(int(n) for n in set(mine["n"]))


def speeds(df: pd.DataFrame, size: int, label: str) -> TensorSpeeds:
    """df: rows of one benchmark run (benchmark.load_document). Each kernel's fastest ok row at size³."""
    at = df[(df["m"] == size) & (df["n"] == size) & (df["k"] == size)]
    shown = [k for k in registry.TENSOR_RUNGS + BASELINES if k in set(at["kernel"])]
    ok = at[at["status"] == "ok"]
    best = ok.loc[ok.groupby("kernel")["gflops"].idxmax()].set_index("kernel")
    failed = {k: _why(at[at["kernel"] == k].iloc[0]) for k in shown if k not in best.index}
    kept = [k for k in shown if k in best.index]
    tflops = best.loc[kept, "gflops"] / 1000
    ref = tflops.get(REFERENCE, np.nan)
    bars = pd.DataFrame({"kernel": kept, "title": best.loc[kept, "title"].tolist(), "tflops": tflops.tolist(),
                         "pct": (100 * tflops / ref).tolist(),
                         "params": [", ".join(f"{a} {v}" for a, v in (p or {}).items()) if isinstance(p, dict) else ""
                                    for p in best.loc[kept, "params"]]})
    missing = [r for r in registry.TENSOR_RUNGS if r not in shown]
    return TensorSpeeds(bars, label, size, missing, failed)


# NVIDIA's A100 architecture whitepaper: 256 dense FP16 FMA per clock per tensor core, 4 tensor cores per
# SM, so 1,024 per SM (x 2 FLOP x 108 SMs x 1,410 MHz = 312 TFLOP/s, the datasheet's dense FP16 peak).
A100_FMA_PER_TENSOR_CORE = 256
A100_TENSOR_CORES_PER_SM = 4
A100_FMA_PER_SM = A100_FMA_PER_TENSOR_CORE * A100_TENSOR_CORES_PER_SM


@dataclass(frozen=True)
class PerCycle:
    """What one SM did per clock cycle in cuBLAS FP16's row of a run, beside the A100's figure."""
    tflops: float           # cuBLAS FP16's TFLOP/s at the size shown
    sm_count: int
    clock_mhz: float        # the run's max_sm_clock_mhz: the most the SMs can run at
    flop: float             # FLOP per cycle per SM
    fma: float              # FMA (2 FLOP each) per cycle per SM
    vs_a100: float          # fma / A100_FMA_PER_SM


def per_sm_cycle(shown: TensorSpeeds, prov: dict) -> PerCycle | None:
    """cuBLAS FP16's speed in shown as work per SM per clock cycle: TFLOP/s * 1e12 / (sm_count *
    max_sm_clock_mhz * 1e6), from the run's provenance. At the maximum clock, so the SMs did at least
    this much per cycle they actually ran. None when cuBLAS FP16 has no timed row at that size or the
    provenance lacks the SM count or clock."""
    row = shown.bars[shown.bars["kernel"] == REFERENCE]
    sms, mhz = prov.get("sm_count"), prov.get("max_sm_clock_mhz")
    if row.empty or not sms or not mhz:
        return None
    tflops = float(row["tflops"].iloc[0])
    flop = tflops * 1e12 / (sms * mhz * 1e6)
    return PerCycle(tflops, int(sms), float(mhz), flop, flop / 2, flop / 2 / A100_FMA_PER_SM)


def _why(row: pd.Series) -> str:
    return str(row["error"]) if isinstance(row.get("error"), str) else str(row["status"])
