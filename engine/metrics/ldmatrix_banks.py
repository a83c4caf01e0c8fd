"""ldmatrix's row addresses on the shared-memory banks, without and with the swizzle (cuda/mma_ldmatrix.cu
against mma_swizzled.cu): which bank group each lane's 16-byte row falls on, the wavefronts that
makes, counted for a whole kernel and set beside Nsight Compute's recorded count. Plain data for the
Tensor cores page's banks figure (engine/plots/tensor_figures.py); no Streamlit here.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.kernels import registry
from engine.metrics.tensor_evidence import ncu_case

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
