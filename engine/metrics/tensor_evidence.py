"""What recorded runs say about the tensor-core instructions: the document's WMMA kernel diagnosed
(its errors, the warps its launch starts, its HMMA count against what the product needs) and, for the
kernels whose count of operations follows from their shape, how many tensor instructions one
operation is. Plain data for the Tensor cores page (drawn by engine/plots/tensor_figures.py); no
Streamlit here.

The recorded data it reads: engine/bench/recorded/fragments/seed_wmma_h200.json (the document
kernel's errors and times, from an H200, on the engine's inputs: make_inputs, uniform in [0, 1)) and
Nsight Compute's counts of the tensor rungs (engine/bench/recorded/ncu/, from
tests/benchmarks/ncu_tensor.py on an H200; the engine's ncu tests check against it too). Both folders
sit apart from the recorded runs of kernels against sizes.

An error measured on inputs in [0, 1) says little: every sum of A·B is K positive products, and the
wrong product the kernel computes has nearly the same sums. So the document's kernel is also computed
here, on the CPU, from its source: which tile each warp of the document's launch computes (its warp
index arithmetic) and which elements of A and B its fragments hold (the fragments' layouts, read from
the source), on the recorded inputs (it reproduces the GPU's error) and on zero-mean inputs.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from engine.kernels import reference, registry, sources
from engine.kernels.problem import Problem, make_inputs, make_problem

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
    spec = registry.get("wmma_as_written")
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
    seed, warp = ncu_case("wmma_as_written 128x128x128"), ncu_case("wmma_warp 128x128x128")
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


# ------------------------------------------------------------------ the document's kernel, computed

SEED_FILE = "wmma_as_written.cu"
FRAGMENT = 16
# What the recorded run's inputs were (tests/benchmarks/tensor_device.py draws them with make_inputs),
# and the zero-mean inputs the error is also computed on.
RECORDED_INPUTS = "uniform in [0, 1)"
ZERO_MEAN_INPUTS = "uniform in [−1, 1)"
# A fragment declaration: fragment<matrix_b, 16, 16, 16, half, col_major> b_frag;
_FRAGMENT_RE = re.compile(r"fragment<\s*matrix_([ab])\s*,[^>]*,\s*(row_major|col_major)\s*>")


@dataclass(frozen=True)
class SeedFault:
    """One line of the document's kernel that makes it wrong: its number in cuda/wmma_as_written.cu, its
    text, a short name and what it does."""
    line: int
    text: str
    name: str
    why: str


def seed_faults() -> list[SeedFault]:
    """The two lines that make the document's kernel wrong, found in its source (not numbered by hand):
    the column-major layout of B's fragment and the warp index of warpM, in the order of the source."""
    lines = sources.load(SEED_FILE).text.splitlines()

    def find(pattern: str) -> tuple[int, str]:
        return next((n, text.strip()) for n, text in enumerate(lines, 1)
                    if re.search(pattern, text) and not text.strip().startswith("//"))
    warp, layout = find(r"int\s+warpM\s*="), find(r"fragment<\s*matrix_b\b")
    return sorted([
        SeedFault(*warp, "the warp index",
                  "It divides the thread's y index by 32, but a warp is 32 threads along x: the 4 warps of a block, "
                  "and the 32 warps of 8 blocks in y, get the same warpM and compute the same 16 × 16 tile of C."),
        SeedFault(*layout, "B's fragment layout",
                  "B's fragment is declared col_major while B is stored row-major (K × N, rows N apart): "
                  "load_matrix_sync reads each 16 × 16 block of B transposed, so the kernel computes A·B' instead of A·B."),
    ], key=lambda f: f.line)   # numbered as they are read, top to bottom


def fragment_layouts() -> dict[str, str]:
    """{'a': 'row_major', 'b': 'col_major'}: the layouts the source declares its fragments with."""
    return {m.group(1): m.group(2) for m in _FRAGMENT_RE.finditer(sources.load(SEED_FILE).text)}


def _seed_problem(n: int) -> Problem:
    spec = registry.get("wmma_as_written")
    return registry.bind(spec, make_problem(n, n, n, block=spec.default_block))


def seed_warp_tiles(p: Problem) -> np.ndarray:
    """(warps, 3): for every warp of the document's launch, its block (linear index) and the (warpM,
    warpN) its lanes compute, from the source's two lines
        warpM = (blockIdx.y * blockDim.y + threadIdx.y) / 32 * 16;
        warpN = (blockIdx.x * blockDim.x + threadIdx.x) / 32 * 16;
    A warp is 32 consecutive threads of its block (x fastest). Its first and last lanes are worked out;
    floor division never decreases, so where they agree every lane between agrees (checked)."""
    launch = registry.get("wmma_as_written").launches[-1]
    (gx, gy), (bx, by) = launch.grid(p), launch.block(p)
    per_block = bx * by // 32
    block = np.arange(gx * gy).repeat(per_block)
    first = np.tile(np.arange(per_block) * 32, gx * gy)
    ends = []
    for lane in (first, first + 31):
        tx, ty = lane % bx, lane // bx
        block_x, block_y = block % gx, block // gx
        ends.append(((block_y * by + ty) // 32 * FRAGMENT, (block_x * bx + tx) // 32 * FRAGMENT))
    (m0, n0), (m1, n1) = ends
    if not ((m0 == m1).all() and (n0 == n1).all()):
        raise ValueError("the lanes of a warp of the document's launch disagree on their tile")
    return np.stack([block, m0, n0], axis=1)


def _fragment(matrix: np.ndarray, row: np.ndarray, col: np.ndarray, ld: int, layout: str) -> np.ndarray:
    """What load_matrix_sync puts in element (r, c) of a 16 x 16 fragment whose pointer is at flat
    offset row * ld + col: ptr[r * ld + c] for row_major, ptr[r + c * ld] for col_major; for every
    pointer at once (row, col: arrays of the same shape), elements on the last two axes."""
    r, c = np.mgrid[0:FRAGMENT, 0:FRAGMENT]
    offset = r * ld + c if layout == "row_major" else r + c * ld
    return matrix.ravel()[(row * ld + col)[..., None, None] + offset]


@dataclass(frozen=True)
class SeedResult:
    c: np.ndarray                 # (M, N) what the kernel stores; NaN where no warp stores
    warps_per_tile: np.ndarray    # (M/16, N/16) how many warps compute each tile


def seed_compute(a: np.ndarray, b: np.ndarray, p: Problem) -> SeedResult:
    """C as the document's kernel computes it from A (M x K) and B (K x N), FP16 values summed in
    FP32: each warp's tile from its warp index, A's and B's fragments read with the layouts the source
    declares (leading dimensions K and N, as its load_matrix_sync calls pass), multiplied step by step
    along K. Warps that share a tile compute the same numbers, so each tile is computed once and counted."""
    m, k = a.shape
    n = b.shape[1]
    layout = fragment_layouts()
    tiles = seed_warp_tiles(p)[:, 1:] // FRAGMENT
    rows_of_tiles, cols_of_tiles = m // FRAGMENT, n // FRAGMENT
    # A warp whose tile lay past C would write outside it (the kernel has no guards): not counted here.
    inside = (tiles[:, 0] < rows_of_tiles) & (tiles[:, 1] < cols_of_tiles)
    warps = np.bincount(tiles[inside, 0] * cols_of_tiles + tiles[inside, 1],
                        minlength=rows_of_tiles * cols_of_tiles).reshape(rows_of_tiles, cols_of_tiles)
    pairs = np.argwhere(warps > 0) * FRAGMENT
    c = np.full((m, n), np.nan, dtype=np.float32)
    a16, b16 = (x.astype(np.float16).astype(np.float32) for x in (a, b))
    steps = np.arange(0, k, FRAGMENT)
    # Every distinct warpN's B fragments and every warpM's A fragments, for all K steps: (tiles, steps, 16, 16).
    col_tiles, row_tiles = np.unique(pairs[:, 1]), np.unique(pairs[:, 0])
    b_frags = _fragment(b16, steps[None, :], col_tiles[:, None], n, layout["b"])
    a_frags = _fragment(a16, row_tiles[:, None], steps[None, :], k, layout["a"])
    # Summed over the K steps as one product: (16, K) x (K, 16) per tile, an FP32 sum as the tensor cores'.
    a_rows = a_frags.transpose(0, 2, 1, 3).reshape(len(row_tiles), FRAGMENT, k)
    b_cols = b_frags.reshape(len(col_tiles), k, FRAGMENT)
    a_panel = a_rows.reshape(-1, k)                                       # (rows of the tiles, K)
    b_panel = b_cols.transpose(1, 0, 2).reshape(k, -1)                    # (K, columns of the tiles)
    rows = (row_tiles[:, None] + np.arange(FRAGMENT)).ravel()
    cols = (col_tiles[:, None] + np.arange(FRAGMENT)).ravel()
    c[np.ix_(rows, cols)] = a_panel @ b_panel
    # A tile in those rows and columns that no warp computes is not stored: NaN, as never written.
    c[np.repeat(np.repeat(warps == 0, FRAGMENT, 0), FRAGMENT, 1)] = np.nan
    return SeedResult(c, warps)


def zero_mean_inputs(p: Problem) -> tuple[np.ndarray, np.ndarray]:
    """A and B uniform in [-1, 1), from the problem's seed: inputs on which an error figure means
    something (the sums of A·B are not all near K/4)."""
    rng = np.random.default_rng(p.seed)
    return (rng.uniform(-1, 1, (p.m, p.k)).astype(np.float32), rng.uniform(-1, 1, (p.k, p.n)).astype(np.float32))


def _seed_error(n: int, inputs) -> float:
    p = _seed_problem(n)
    a, b = inputs(p)
    a16, b16 = (x.astype(np.float16).astype(np.float64) for x in (a, b))
    return reference.relative_error(seed_compute(a, b, p).c, a16 @ b16)


def diagonal_error() -> float:
    """The error to expect on zero-mean inputs: A·B' shares with A·B only the terms of B's elements a
    transpose leaves in place (the diagonal of each 16 x 16 block, 16 of 256), so the two are nearly
    uncorrelated and ||A·B' − A·B|| / ||A·B|| is about √(2 − 2 · 16/256)."""
    return float(np.sqrt(2 - 2 * FRAGMENT / FRAGMENT**2))


# The largest recorded size the page works the kernel out at: 2,048³ takes several seconds of CPU
# (two FP32 products and two float64 references), for a figure the smaller sizes already show.
COMPUTED_MAX = 1024


@functools.cache   # the same inputs every time: computed once per process (under a second)
def seed_errors() -> pd.DataFrame:
    """Per recorded size: the error against A·B that the recorded H200 run measured (inputs in [0, 1)),
    the same computed here from the source, and computed here on zero-mean inputs (NaN above
    COMPUTED_MAX)."""
    data = json.loads(SEED.read_text())
    rows = []
    for size, r in sorted(data["sizes"].items(), key=lambda kv: int(kv[0])):
        n = int(size)
        here = n <= COMPUTED_MAX
        rows.append({"M = N = K": n, "recorded": r["error_vs_ab"],
                     "computed": _seed_error(n, make_inputs) if here else np.nan,
                     "zero-mean": _seed_error(n, zero_mean_inputs) if here else np.nan})
    return pd.DataFrame(rows)
