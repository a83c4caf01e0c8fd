"""Which lane of a warp holds which matrix element, as the PTX ISA documents it, for the tensor-core
instructions of cuda/trace.cuh (MMA_16816 and LDMATRIX_X*), as arrays the pages and tests can index.

Sources, in NVIDIA's "Parallel Thread Execution ISA" (section "Warp Level Matrix Multiply-Accumulate
Instructions"):
  - "Matrix Fragments for mma.m16n8k16 with floating point type" (figures "MMA .m16n8k16 fragment
    layout for matrix A / B with .f16 / .bf16 type" and "... for accumulator matrix C/D"), with
    groupID = lane >> 2 and threadID_in_group = lane % 4:
      A (16 x 16): a_i at row groupID for i in 0, 1, 4, 5, else groupID + 8;
                   col 2 threadID_in_group + (i & 1), plus 8 for i >= 4
      B (16 x 8):  b_i at row 2 threadID_in_group + (i & 1), plus 8 for i >= 2; col groupID
      C, D (16 x 8): c_i at row groupID for i < 2, else groupID + 8; col 2 threadID_in_group + (i & 1)
    Elements are numbered low to high: a register (.f16x2) holds elements 2r and 2r + 1, the first
    in its low 16 bits; .f32 accumulators are one element a register.
  - "Warp-level matrix load instruction: ldmatrix": lanes 8m .. 8m + 7 name the rows of matrix m
    (row j by lane 8m + j); lane t receives in register m elements 2 (t % 4) and 2 (t % 4) + 1 of
    row t / 4 of matrix m. With .trans the matrix is "loaded in column-major format": lane t
    receives element t / 4 of rows 2 (t % 4) and 2 (t % 4) + 1 instead.

No Streamlit here: this is engine code the pages read.
"""
from __future__ import annotations

import numpy as np

WARP = 32
# mma.m16n8k16: the elements each lane holds of each operand, and the operand's shape.
_MMA_ELEMENTS = {"a": 8, "b": 4, "c": 4}
MMA_16816_SHAPES = {"a": (16, 16), "b": (16, 8), "c": (16, 8)}


def ptx_mma_m16n8k16(operand: str) -> np.ndarray:
    """(32, elements, 2) int array: (row, col) of element i held by each lane, in register order,
    for operand "a" (A, 16 x 16, 8 elements), "b" (B, 16 x 8, 4) or "c" (C and D, 16 x 8, 4) of
    mma.m16n8k16 with .f16 A and B (the accumulators' layout is the same for .f32 and .f16)."""
    if operand not in _MMA_ELEMENTS:
        raise ValueError(f"operand {operand!r}: mma has operands 'a', 'b' and 'c'")
    lane = np.arange(WARP)[:, None]
    i = np.arange(_MMA_ELEMENTS[operand])[None, :]
    group, in_group = lane >> 2, lane % 4
    pair = 2 * in_group + (i & 1)                      # the two elements of one register
    if operand == "a":
        row = group + 8 * ((i // 2) % 2)               # a0 a1 | a2 a3 (+8) | a4 a5 | a6 a7 (+8)
        col = pair + 8 * (i >= 4)
    elif operand == "b":
        row = pair + 8 * (i >= 2)
        col = np.broadcast_to(group, row.shape)
    else:
        row = group + 8 * (i >= 2)
        col = np.broadcast_to(pair, row.shape)
    return np.stack(np.broadcast_arrays(row, col), axis=-1).astype(np.int64)


def ptx_ldmatrix(matrices: int = 4, trans: bool = False) -> np.ndarray:
    """(32, 2 * matrices, 2) int array: where each lane's elements come from, register by register
    (register m holds elements 2m and 2m + 1), as (named row, element of that row): the named row is
    the lane that named it, 8m + j for row j of matrix m (so 0 .. 8 * matrices - 1), the element
    0 .. 7 of its 16 bytes."""
    if matrices not in (1, 2, 4):
        raise ValueError(f"ldmatrix loads 1, 2 or 4 matrices, not {matrices}")
    lane = np.arange(WARP)[:, None]
    e = np.arange(2 * matrices)[None, :]
    m, h = e // 2, e % 2
    i, j = lane // 4, 2 * (lane % 4) + h               # (row, column) in the matrix as the lane sees it
    row, col = (j, i) if trans else (i, j)             # .trans: the matrix is stored transposed
    return np.stack(np.broadcast_arrays(8 * m + row, col), axis=-1).astype(np.int64)
