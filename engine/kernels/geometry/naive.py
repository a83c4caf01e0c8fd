"""Launch geometry of the naive kernels (cuda/naive_*.cu, transpose_b.cu): one thread per output
of C, in blocks of the shape the user picks (Problem.block), so the grid is C's size over it.
"""
from __future__ import annotations

import numpy as np

from engine.kernels.geometry import cdiv
from engine.kernels.problem import Problem


def block(p: Problem) -> tuple[int, int]:
    return p.block


def rows_grid(p: Problem) -> tuple[int, int]:
    """blockIdx.x over the rows of C (naive_x_rows: seed 000's mapping)."""
    return (cdiv(p.m, p.block[0]), cdiv(p.n, p.block[1]))


def cols_grid(p: Problem) -> tuple[int, int]:
    """blockIdx.x over the columns of C."""
    return (cdiv(p.n, p.block[0]), cdiv(p.m, p.block[1]))


def transpose_grid(p: Problem) -> tuple[int, int]:
    """transpose_b writes BT (N x K): blockIdx.x over its rows, blockIdx.y over its columns."""
    return (cdiv(p.n, p.block[0]), cdiv(p.k, p.block[1]))


def records(p: Problem) -> int:
    return 2 * p.k + 1


def transposes_read_by(p: Problem, blocks: np.ndarray) -> np.ndarray:
    """naive_transposed_b's block (x, y) reads rows x*bx .. x*bx+bx-1 of BT (its columns of C), all
    K of them; transpose_b's block (x, y), of the same block shape, writes those rows for columns
    y*by .. y*by+by-1 of BT. So: the transpose blocks of the same x, every y."""
    xs = np.unique(blocks[:, 0])
    return np.array([(x, y) for y in range(cdiv(p.k, p.block[1])) for x in xs], dtype=np.uint32).reshape(-1, 2)


def transpose_records(p: Problem) -> int:
    return 2   # transpose_b: one load of B and one store of BT per thread
